#!/usr/bin/env bash
# Measures what a server nobody calls costs: each configuration is started,
# initialised (over stdio: initialize and initialized, with stdin kept
# open), left alone for SETTLE seconds, then watched for WINDOW seconds.
# It prints, per configuration, the CPU time of all the process's threads
# a minute (utime+stime of /proc/PID/stat, in clock ticks, and the sum of
# the threads' run time in /proc/PID/task/*/schedstat, in nanoseconds) and
# its wake-ups a second (the voluntary context switches of its threads,
# from /proc/PID/task/*/status). A process that holds an embedded store
# stops its server once the store has been idle for its store_dormancy
# (DORMANCY), so those configurations are left alone for at least that
# long, and 5 seconds more, before the window: the figures are those of a
# dormant holder. A sibling goes dormant too, and the holder beside it
# within DORMANCY after that, so the pair is left alone twice as long. The configurations:
#   bare       bench/bare over stdio: mcp-go alone, the floor
#   stdio      wink-mcp over stdio, sessions in memory
#   session    wink-mcp --session idle --workspace DIR (a desktop client's
#              configuration: its session in the embedded store)
#   awake      the session configuration with store_dormancy 0: the
#              holder as it was before it could go dormant
#   http       wink-mcp --http 127.0.0.1:0, no client
#   sibling    two processes of the session configuration on the same
#              --state-dir and --session, watched together: the holder of
#              the store with a sibling beside it, and the sibling
#
# Environment:
#   WINK_BIN   the wink-mcp binary (default: built from the repository)
#   SETTLE     seconds between the answer to initialize and the window (5;
#              for the configurations with an embedded store, at least
#              DORMANCY + 5, and for the sibling pair, which goes dormant
#              in turn, 2 DORMANCY + 5)
#   DORMANCY   the store_dormancy of the embedded store, in seconds (30,
#              the default); - passes no configuration file, for a build
#              that has no store_dormancy (awake is then session again)
#   WINDOW     seconds watched (30)
#   CONFIGS    the configurations to run, separated by spaces (all)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source bench/build.sh
scratch
build "$tmp" bare
wink="$tmp/wink"
settle="${SETTLE:-5}"
dormancy="${DORMANCY:-30}"
# The settle of a configuration with an embedded store, which goes dormant,
# and the configuration files: dormant, and awake (store_dormancy 0).
if [[ "$dormancy" == - ]]; then
	dormant_settle="$settle" pair_settle="$settle" dormant=() awake=()
else
	dormant_settle=$((settle > dormancy + 5 ? settle : dormancy + 5))
	# A pair goes dormant in turn: the sibling once idle, then the
	# holder, which looks again store_dormancy after it saw the sibling.
	pair_settle=$((settle > 2 * dormancy + 5 ? settle : 2 * dormancy + 5))
	printf 'store_dormancy: %ss\n' "$dormancy" >"$tmp/dormant.yaml"
	printf 'store_dormancy: 0s\n' >"$tmp/awake.yaml"
	dormant=(--config "$tmp/dormant.yaml") awake=(--config "$tmp/awake.yaml")
fi
window="${WINDOW:-30}"
hz="$(getconf CLK_TCK)"
mkdir -p "$tmp/workspace"
printf 'hello\n' >"$tmp/workspace/README.md"

# start NAME COMMAND... starts COMMAND over stdio, sends it initialize and
# initialized, keeps its stdin open, waits for its answer and sets pid.
start() {
	local name="$1" fd
	shift
	mkfifo "$tmp/$name.in"
	"$@" <"$tmp/$name.in" >"$tmp/$name.out" 2>"$tmp/$name.log" &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$tmp/$name.in"
	printf '%s\n' \
		'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"0"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"$fd"
	for _ in $(seq 1000); do
		grep -q '"id":1' "$tmp/$name.out" 2>/dev/null && return 0
		sleep 0.01
	done
	echo "$name does not answer initialize:" >&2
	cat "$tmp/$name.log" >&2
	return 1
}

# serve NAME COMMAND... starts COMMAND, an HTTP server, waits until it
# logs its address and sets pid.
serve() {
	local name="$1"
	shift
	"$@" </dev/null >"$tmp/$name.out" 2>"$tmp/$name.log" &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 1000); do
		grep -q 'addr=' "$tmp/$name.log" && return 0
		sleep 0.01
	done
	echo "$name does not serve:" >&2
	cat "$tmp/$name.log" >&2
	return 1
}

# counters PID prints the process's CPU ticks (utime+stime), the run time
# of its threads in ns and their voluntary context switches.
counters() {
	local stat f ns=0 vcs=0 v
	stat="$(cat "/proc/$1/stat")"
	read -r -a f <<<"${stat##*) }"
	for f2 in /proc/"$1"/task/*; do
		read -r v _ <"$f2/schedstat" 2>/dev/null && ns=$((ns + v))
		v="$(grep -s '^voluntary_ctxt_switches' "$f2/status" | cut -f2)"
		[[ -n "$v" ]] && vcs=$((vcs + v))
	done
	echo "$((f[11] + f[12])) $ns $vcs"
}

# watch LABEL=PID... samples every PID over the window, after the settle
# (wait, when set, instead), and prints a line per label.
watch() {
	local pair label p before=() after=() i=0
	sleep "${wait:-$settle}"
	for pair in "$@"; do
		before+=("$(counters "${pair#*=}")")
	done
	sleep "$window"
	for pair in "$@"; do
		after+=("$(counters "${pair#*=}")")
	done
	for pair in "$@"; do
		label="${pair%%=*}"
		read -r t0 n0 v0 <<<"${before[$i]}"
		read -r t1 n1 v1 <<<"${after[$i]}"
		p="${pair#*=}"
		kill -0 "$p" 2>/dev/null || { echo "$label (process $p) ended during the window" >&2; return 1; }
		awk -v l="$label" -v dt="$((t1 - t0))" -v dn="$((n1 - n0))" -v dv="$((v1 - v0))" -v hz="$hz" -v w="$window" \
			'BEGIN { printf "%-34s %14.1f %16.1f %12.2f\n", l, dt*1000/hz*60/w, dn/1e6*60/w, dv/w }'
		i=$((i + 1))
	done
}

# stop ends the processes started so far.
stop() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	pids=()
}

echo
with="store_dormancy ${dormancy}s"
[[ "$dormancy" == - ]] && with="no configuration file"
echo "=== idle: settle ${settle}s (${dormant_settle}s with an embedded store, ${pair_settle}s for the sibling pair, $with), window ${window}s; CPU of all threads, wake-ups = voluntary context switches"
printf '%-34s %14s %16s %12s\n' configuration "CPU ms/min" "(schedstat)" "wake-ups/s"
for c in ${CONFIGS:-bare stdio session awake http sibling}; do
	wait=""
	case "$c" in
	session | http) wait="$dormant_settle" ;;
	sibling) wait="$pair_settle" ;;
	esac
	case "$c" in
	bare)
		start bare "$tmp/bare"
		watch "bare mcp-go, stdio=$pid"
		;;
	stdio)
		start stdio "$wink" --state-dir "$tmp/state-stdio"
		watch "wink-mcp stdio, memory=$pid"
		;;
	session)
		start session "$wink" "${dormant[@]}" --state-dir "$tmp/state-session" --session idle --workspace "$tmp/workspace"
		watch "wink-mcp --session --workspace=$pid"
		;;
	awake)
		start awake "$wink" "${awake[@]}" --state-dir "$tmp/state-awake" --session idle --workspace "$tmp/workspace"
		watch "--session, store_dormancy 0=$pid"
		;;
	http)
		serve http "$wink" "${dormant[@]}" --state-dir "$tmp/state-http" --http 127.0.0.1:0
		watch "wink-mcp --http, no client=$pid"
		;;
	sibling)
		start holder "$wink" "${dormant[@]}" --state-dir "$tmp/state-pair" --session idle --workspace "$tmp/workspace"
		holder="$pid"
		start sibling "$wink" "${dormant[@]}" --state-dir "$tmp/state-pair" --session idle --workspace "$tmp/workspace"
		watch "--session: holder with a sibling=$holder" "--session: the sibling=$pid"
		;;
	*)
		echo "unknown configuration $c (bare, stdio, session, awake, http, sibling)" >&2
		exit 2
		;;
	esac
	stop
done
