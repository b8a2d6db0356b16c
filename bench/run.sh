#!/usr/bin/env bash
# Measures wink-mcp against a bare mcp-go server (bench/bare) end to end, in
# the same run, over stdio (bench/http.sh: the same over Streamable HTTP):
#   1. wink planning_setup_plan vs bare setup_plan (the same work: a plan
#      kept per session, rendered as text), with an objective that differs
#      on every call, so that every call changes the plan and commits it;
#   2. the same with the same objective on every call, which changes
#      nothing after the first call and commits nothing;
#   3. wink planning_setup_plan vs bare echo (the floor of the protocol);
#   4. wink write_file (1 KB that differs on every call) and read_file (the
#      workspace) vs bare echo of the same 1 KB of text.
# Each wink binary is measured with its session in each store a user runs
# it with: over stdio, in memory (no --session) and in the embedded store
# (--session bench, the desktop configuration); over HTTP, in the embedded
# store (the default) and in memory (--store memory).
# Each comparison is one run of bench/load, whose doc says what is measured;
# the ratios are to bare.
#
# Environment:
#   WINK_BIN     the wink-mcp binary (default: built from the repository)
#   WINK_BEFORE  another wink-mcp binary, measured in the same runs as "before",
#                as it serves by default (an older build may know none of
#                the store's flags)
#   HOOKS=1      run each wink binary twice: with every lifecycle hook on
#                (bench/hooks.yaml) and with none (bench/nohooks.yaml)
#   CALLS        measured calls per side, in-flight level and round (10000)
#   ROUNDS       rounds; each side's median is reported (5)
#   INFLIGHT     comma-separated in-flight levels (1,16)
#   WARMUP       unmeasured calls on each fresh server (500)
#   SESSIONS     over HTTP, sessions the calls in flight are spread over (1)
#   ONLY         comma-separated comparisons to run, of plan, same, echo,
#                write and read (numbered 1 to 4 above: same is 2); default all
#   TRANSPORT    stdio or http (default stdio; bench/http.sh sets http)
#
# Exits non-zero if a build or a comparison fails (any failed call fails it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$root"
source bench/build.sh
build "$tmp" bare load
if [[ -n "${WINK_BEFORE:-}" ]]; then
	ln -s "$(realpath "$WINK_BEFORE")" "$tmp/before"
fi
cp bench/hooks.yaml bench/nohooks.yaml "$tmp/"
cd "$tmp" # where the servers write their files (the audit file of hooks.yaml)
# The servers' state (the embedded store of an HTTP server) lives here too,
# not in the user's state directory.
export XDG_STATE_HOME="$tmp/state"

# The 1 KB of text, as JSON string content and in a file to mount.
text=""
for i in $(seq -w 0 19); do
	text+="line $i of the benchmark file, some text here\n"
done
mkdir proj
printf '%b' "$text" >proj/file.txt
# {{n}} is the number of the call (bench/load): a new objective each call.
plan_args='{"objective":"bench {{n}}","initial_steps":["a","b","c"]}'
same_args='{"objective":"bench","initial_steps":["a","b","c"]}'
# The two stores each wink binary is measured with.
if [[ "${TRANSPORT:-stdio}" == http ]]; then
	stores=("embedded=" "memory=--store memory")
else
	stores=("memory=" "embedded=--session bench")
fi

status=0

# compare NAME TITLE BARE_TOOL BARE_ARGS WINK_TOOL WINK_ARGS [WINK_FLAGS] runs
# one comparison, unless ONLY leaves it out, recording a failure without
# stopping the script.
compare() {
	[[ -z "${ONLY:-}" || ",$ONLY," == *",$1,"* ]] || return 0
	local comparison="$1"
	shift
	local title="$1" tool="$4" args="$5" flags="${6:-}"
	local sides=(--side "bare=$tmp/bare" --tool "$2" --args "$3")
	local name bin store side
	for name in wink before; do
		bin="$tmp/$name"
		[[ -e "$bin" ]] || continue
		local kinds=("${stores[@]}")
		# An older build may know none of the store's flags: it is measured
		# as it serves by default.
		[[ "$name" == before ]] && kinds=("default=")
		for store in "${kinds[@]}"; do
			# Each binary keeps its state apart (builds may store it
			# differently), and each comparison starts afresh: a resumed
			# session keeps its stored files, not a new --mount.
			side="$name-${store%%=*}=$bin ${store#*=} $flags"
			[[ "$name" == wink ]] && side+=" --state-dir $tmp/state-$name-$comparison"
			if [[ "${HOOKS:-}" == 1 ]]; then
				sides+=(--side "${side/=/-nohooks=} --config $tmp/nohooks.yaml" --tool "$tool" --args "$args")
				sides+=(--side "${side/=/-hooks=} --config $tmp/hooks.yaml" --tool "$tool" --args "$args")
			else
				sides+=(--side "$side" --tool "$tool" --args "$args")
			fi
		done
	done
	echo
	echo "=== $title"
	if ! "$tmp/load" --transport "${TRANSPORT:-stdio}" --calls "${CALLS:-10000}" --rounds "${ROUNDS:-5}" \
		--inflight "${INFLIGHT:-1,16}" --warmup "${WARMUP:-500}" --sessions "${SESSIONS:-1}" "${sides[@]}"; then
		echo "=== FAILED: $title" >&2
		status=1
	fi
}

compare plan "wink planning_setup_plan vs bare setup_plan, a new objective each call" setup_plan "$plan_args" planning_setup_plan "$plan_args"
compare same "wink planning_setup_plan vs bare setup_plan, the same objective each call" setup_plan "$same_args" planning_setup_plan "$same_args"
compare echo "wink planning_setup_plan vs bare echo" echo '{"text":"hi"}' planning_setup_plan "$plan_args"
compare write "wink write_file vs bare echo (the same 1 KB of text, new each call)" echo "{\"text\":\"{{n}} $text\"}" \
	write_file "{\"file_path\":\"out/file.txt\",\"overwrite\":true,\"content\":\"{{n}} $text\"}"
compare read "wink read_file vs bare echo (the same 1 KB of text)" echo "{\"text\":\"$text\"}" \
	read_file '{"file_path":"file.txt"}' "--mount $tmp/proj"

exit "$status"
