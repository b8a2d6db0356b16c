#!/usr/bin/env bash
# Measures what keeping sessions costs wink-mcp, over the real binary, with
# its sessions in the embedded store (the default):
#   bash bench/state.sh sessions   10,000 HTTP sessions, each with a plan and
#                                  a 1 KB file: server memory per session
#   bash bench/state.sh growth     4,000 writes of 100 KB to one file in one
#                                  session: growth of the server's RSS
#   bash bench/state.sh commit     one 1 KB write in a 10,000-file workspace:
#                                  bytes written to the store; time to resume
#                                  the session after a restart
#   bash bench/state.sh percall    CPU and bytes written per call of write_file,
#                                  read_file, edit_file, planning_update_step and
#                                  rm in a session of --files N files (flat or
#                                  --layout dirs; --stored, --disk), beside an
#                                  empty one with --against 0; not in "all"
#   bash bench/state.sh start      process start to the answer to initialize,
#                                  embedded store against --store memory, over
#                                  stdio and HTTP, in the same runs
# Without an argument it runs all four. The first three are commands of
# bench/state (its doc says what they measure); arguments after the first go
# to it, for instance --flags "--store memory" or --n 1000. start is
# bench/load, whose "start ms" column is the figure.
#
# Environment:
#   WINK_BIN   the wink-mcp binary (default: built from the repository)
#   ROUNDS     start: rounds, each starting both servers once (15)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$root"
source bench/build.sh
build "$tmp" state load
wink="$tmp/wink"

start() {
	local transport
	for transport in stdio http; do
		# Over stdio only a process named by --session keeps its session in
		# the embedded store; without it, the store is memory.
		local embedded="$wink --state-dir $tmp/start"
		[[ "$transport" == stdio ]] && embedded+=" --session bench"
		echo
		echo "=== start: embedded store against --store memory, $transport"
		"$tmp/load" --transport "$transport" --calls 20 --warmup 0 --inflight 1 --rounds "${ROUNDS:-15}" \
			--side "memory=$wink --store memory" --tool ls --args '{}' \
			--side "embedded=$embedded"
	done
}

what="${1:-all}"
[[ $# -gt 0 ]] && shift
case "$what" in
sessions | growth | commit | percall)
	"$tmp/state" "$what" --bin "$wink" "$@"
	;;
start)
	start
	;;
all)
	for cmd in sessions growth commit; do
		echo
		echo "=== $cmd"
		"$tmp/state" "$cmd" --bin "$wink" "$@"
	done
	start
	;;
*)
	echo "usage: bash bench/state.sh [sessions|growth|commit|percall|start|all] [bench/state flags]" >&2
	exit 2
	;;
esac
