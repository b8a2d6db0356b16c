#!/usr/bin/env bash
# Measures what a call costs when it is made through a process that does not
# hold its state directory's store (which reaches the holder's server over
# loopback) against one made through the holder, in the same run, with a
# new objective on each call, so that every call commits:
#   1. over HTTP: two wink-mcp --http servers on one state directory, the
#      first holding its store; the calls go to the holder or to the other
#      (bench/load sides given by URL, the same servers in every round), and
#      the CPU per call is that of both processes;
#   2. over stdio, with --session: the holder of a state directory, with
#      an idle process beside it (bench/load --beside), against a process
#      beside an idle holder, and a process alone on its directory; the
#      CPU of both processes counts where there are two;
#   3. takeover: the time from kill -9 of the holder to the next answered
#      call through another process (bench/state takeover, 10 rounds).
#
# Environment:
#   WINK_BIN   the wink-mcp binary (default: built from the repository)
#   CALLS      measured calls per side, in-flight level and round (5000)
#   ROUNDS     rounds; each side's median is reported (5)
#   INFLIGHT   comma-separated in-flight levels (1,16)
#   SESSIONS   over HTTP, the sessions the calls are spread over (16)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source bench/build.sh
scratch
build "$tmp" load state
wink="$tmp/wink"
args='{"objective":"bench {{n}}","initial_steps":["a","b","c"]}'
load=("$tmp/load" --calls "${CALLS:-5000}" --rounds "${ROUNDS:-5}" --inflight "${INFLIGHT:-1,16}" --warmup 500)

# holds DIR PID waits until process PID holds the store in DIR.
holds() {
	for _ in $(seq 1000); do
		[[ "$(head -n1 "$1/lock" 2>/dev/null)" == "$2" ]] && return 0
		sleep 0.01
	done
	echo "process $2 does not hold $1" >&2
	return 1
}

# serve NAME starts an HTTP server on the shared state directory, and sets
# pid and url.
serve() {
	"$wink" --http 127.0.0.1:0 --state-dir "$tmp/http" 2>"$tmp/$1.log" &
	pid=$!
	pids+=("$pid")
	url=""
	for _ in $(seq 1000); do
		url="$(grep -o 'addr=[0-9.:]*' "$tmp/$1.log" | head -n1 | cut -d= -f2 || true)"
		[[ -n "$url" ]] && break
		sleep 0.01
	done
	[[ -n "$url" ]] || { echo "$1 does not serve:" >&2; cat "$tmp/$1.log" >&2; return 1; }
	url="http://$url/mcp"
}

echo
echo "=== HTTP: planning_setup_plan through the holder and through the other server, ${SESSIONS:-16} sessions"
serve holder
holder="$pid" holder_url="$url"
holds "$tmp/http/store/http" "$holder"
serve other
other="$pid" other_url="$url"
"${load[@]}" --transport http --sessions "${SESSIONS:-16}" \
	--side "holder=$holder_url" --tool planning_setup_plan --args "$args" --cpu-of "$holder,$other" \
	--side "other=$other_url" --cpu-of "$holder,$other"

echo
echo "=== stdio: planning_setup_plan, --session: through the holder, through the other process, alone"
mkfifo "$tmp/idle.in"
"$wink" --state-dir "$tmp/beside" --session bench <"$tmp/idle.in" >/dev/null 2>"$tmp/idle.log" &
idle=$!
pids+=("$idle")
exec 3>"$tmp/idle.in"
holds "$tmp/beside/store/stdio-bench" "$idle"
"${load[@]}" --transport stdio \
	--side "holder=$wink --state-dir $tmp/pair --session bench" --tool planning_setup_plan --args "$args" \
	--beside "$wink --state-dir $tmp/pair --session bench" \
	--side "other=$wink --state-dir $tmp/beside --session bench" --cpu-of "$idle" \
	--side "alone=$wink --state-dir $tmp/alone --session bench"

echo
echo "=== takeover"
"$tmp/state" takeover --bin "$wink" --rounds 10
