#!/usr/bin/env bash
# Compares the load figures of wink-mcp with those of a bare mcp-go server
# (bench/bare) over stdio:
#   1. wink planning_setup_plan vs bare setup_plan (the same work);
#   2. wink planning_setup_plan vs bare echo (the floor of the protocol);
#   3. wink write_file and read_file (the workspace) vs bare echo of the same
#      text.
#
# Environment:
#   CALLS     measured calls per side, in-flight level and round (default 20000)
#   ROUNDS    interleaved rounds; each side's median is reported (default 3)
#   INFLIGHT  comma-separated in-flight levels (default 1,16)
#   COLD      cold starts per side and round (default 20)
#   WINK_CMD  command serving wink-mcp over stdio (default: the binary built
#             from the repository root, run without arguments)
#   SERVER_STDERR  set to 1 to pass the servers' stderr through (default: quiet)
#   LOAD_FLAGS     extra flags for bench/load, e.g. "--json"
#
# Exits non-zero if a build or a comparison fails (including any failed call).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

CALLS="${CALLS:-20000}"
ROUNDS="${ROUNDS:-3}"
INFLIGHT="${INFLIGHT:-1,16}"
COLD="${COLD:-20}"

cd "$root"
echo "building bench/bare, bench/load and wink-mcp..." >&2
go build -o "$tmp/bare" ./bench/bare
go build -o "$tmp/load" ./bench/load
go build -o "$tmp/wink-mcp" .
# bench/load splits --cmd into words itself; quote the paths for it.
bare_cmd="$(printf '%q' "$tmp/bare")"
WINK_CMD="${WINK_CMD:-$(printf '%q' "$tmp/wink-mcp")}"

quiet=--quiet
if [[ "${SERVER_STDERR:-}" == 1 ]]; then
	quiet=
fi

plan_args='{"objective":"bench","initial_steps":["a","b","c"]}'
status=0

# compare TITLE ARGS... runs one comparison, recording a failure without
# stopping the script.
compare() {
	local title="$1"
	shift
	echo
	echo "=== $title"
	# shellcheck disable=SC2086 # $quiet and LOAD_FLAGS are lists of flags.
	if ! "$tmp/load" --compare --calls "$CALLS" --rounds "$ROUNDS" --inflight "$INFLIGHT" --cold "$COLD" \
		$quiet ${LOAD_FLAGS:-} "$@"; then
		echo "=== FAILED: $title" >&2
		status=1
	fi
}

compare "wink planning_setup_plan vs bare setup_plan" \
	--cmd "$WINK_CMD" --label wink --tool planning_setup_plan --args "$plan_args" \
	--cmd2 "$bare_cmd" --label2 bare --tool2 setup_plan --args2 "$plan_args"

compare "wink planning_setup_plan vs bare echo" \
	--cmd "$WINK_CMD" --label wink --tool planning_setup_plan --args "$plan_args" \
	--cmd2 "$bare_cmd" --label2 bare --tool2 echo --args2 '{"text":"hi"}'

# The workspace: write_file (memory backend) and read_file (a mounted file)
# against echo of the same text, so that both sides carry the same payload.
mkdir -p "$tmp/proj"
for i in $(seq -w 0 19); do
	echo "line $i of the benchmark file, some text here"
done >"$tmp/proj/file.txt"
text="$(cat "$tmp/proj/file.txt")"
json_text="$(printf '%s\n' "$text" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | awk '{printf "%s\\n", $0}')"

compare "wink write_file vs bare echo (the same 1 KB of text)" \
	--cmd "$WINK_CMD" --label wink --tool write_file --args "{\"file_path\":\"out/file.txt\",\"overwrite\":true,\"content\":\"$json_text\"}" \
	--cmd2 "$bare_cmd" --label2 bare --tool2 echo --args2 "{\"text\":\"$json_text\"}"

compare "wink read_file vs bare echo (the same 1 KB of text)" \
	--cmd "$WINK_CMD --mount $(printf '%q' "$tmp/proj")" --label wink --tool read_file --args '{"file_path":"file.txt"}' \
	--cmd2 "$bare_cmd" --label2 bare --tool2 echo --args2 "{\"text\":\"$json_text\"}"

exit "$status"
