#!/usr/bin/env bash
# Measures the evaluation section end to end over stdio, with bench/load:
#   1. evaluate of a Starlark snippet that reads and writes one file (1 KB),
#      in process and in a child process (evaluation.isolate), against
#      read_file and write_file of the same file, each one call: the two
#      calls an agent makes without evaluate cost the sum of their
#      latencies;
#   2. run_command "true" on a workspace of 1,000 files (1 KB each), memory
#      and disk: the cost of the sandbox, of copying the workspace in and of
#      comparing it afterwards.
# The first side of each run is its baseline.
#
# Environment:
#   WINK_BIN  the wink-mcp binary (default: built from the repository)
#   CALLS     measured calls per side and round (500; run_command: CALLS/5)
#   ROUNDS    rounds; each side's median is reported (3)
#   WARMUP    unmeasured calls on each fresh server (50)
#   TIMEOUT   bound on each run of bench/load (30m)
#   TMPDIR    where run_command's copies of the workspace are made (/tmp):
#             their cost is mostly that of making 1,000 files there
#
# Exits non-zero if a build or a run fails (any failed call fails it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$root"
source bench/build.sh
build "$tmp" load
cd "$tmp"
export XDG_STATE_HOME="$tmp/state"

# The 1 KB of text, in a file to mount, and a tree of 1,000 such files.
text=""
for i in $(seq -w 0 19); do
	text+="line $i of the benchmark file, some text here\n"
done
mkdir proj many disk
printf '%b' "$text" >proj/file.txt
for d in $(seq -w 0 9); do
	mkdir "many/d$d"
	for f in $(seq -w 0 99); do
		printf '%b' "$text" >"many/d$d/f$f.txt"
	done
done
cp -r many/. disk/

printf 'sections: [workspace, evaluation]\n' >eval.yaml
printf 'sections: [workspace, evaluation]\nevaluation:\n  isolate: true\n' >child.yaml
printf 'sections: [workspace, evaluation]\nevaluation:\n  run_command:\n    enabled: true\n' >run.yaml

status=0
load() {
	local title="$1" calls="$2"
	shift 2
	echo
	echo "=== $title"
	if ! "$tmp/load" --transport stdio --calls "$calls" --rounds "${ROUNDS:-3}" \
		--inflight 1 --warmup "${WARMUP:-50}" --timeout "${TIMEOUT:-30m}" "$@"; then
		echo "=== FAILED: $title" >&2
		status=1
	fi
}

snippet='{"code":"fs.write(\"file.txt\", fs.read(\"file.txt\"))"}'
calls="${CALLS:-500}"
load "evaluate (read and write one file) vs read_file and write_file" "$calls" \
	--side "read_file=$tmp/wink --config $tmp/eval.yaml --mount $tmp/proj" --tool read_file --args '{"file_path":"file.txt"}' \
	--side "write_file=$tmp/wink --config $tmp/eval.yaml --mount $tmp/proj" --tool write_file --args "{\"file_path\":\"out.txt\",\"overwrite\":true,\"content\":\"$text\"}" \
	--side "evaluate=$tmp/wink --config $tmp/eval.yaml --mount $tmp/proj" --tool evaluate --args "$snippet" \
	--side "evaluate-child=$tmp/wink --config $tmp/child.yaml --mount $tmp/proj" --tool evaluate --args "$snippet"
load "run_command true on 1,000 files, memory and disk workspace" "$((calls / 5))" \
	--side "evaluate-memory=$tmp/wink --config $tmp/run.yaml --mount $tmp/many" --tool evaluate --args '{"code":"1"}' \
	--side "run_command-memory=$tmp/wink --config $tmp/run.yaml --mount $tmp/many" --tool run_command --args '{"command":"true"}' \
	--side "run_command-disk=$tmp/wink --config $tmp/run.yaml --workspace $tmp/disk" --tool run_command --args '{"command":"true"}'

exit "$status"
