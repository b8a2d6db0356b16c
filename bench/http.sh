#!/usr/bin/env bash
# Measures wink-mcp over Streamable HTTP against a bare mcp-go Streamable
# HTTP server with one echo tool (bench/bare --http), both built here, in
# the same run: 64 concurrent sessions per side calling
# planning_setup_plan (wink) and echo (bare), as ratios. See
# bench/httpload for what is measured and checked.
#
# Environment:
#   SESSIONS   concurrent sessions per side and round (default 64)
#   CALLS      calls per session (default 200)
#   ROUNDS     rounds (default 5)
#   SLICES     slices per round, alternating between the sides (default 10)
#   MIN_RATIO  fail below this median wink/bare ratio (default 0: report only)
#   WINK_ARGS  extra arguments for wink-mcp, e.g. "--config planning-only.yaml"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$root"
echo "building wink-mcp, bench/bare and bench/httpload..." >&2
go build -o "$tmp/wink-mcp" .
go build -o "$tmp/bare" ./bench/bare
go build -o "$tmp/httpload" ./bench/httpload
"$tmp/httpload" --wink "$tmp/wink-mcp" --bare "$tmp/bare" \
	--sessions "${SESSIONS:-64}" --calls "${CALLS:-200}" --rounds "${ROUNDS:-5}" --min-ratio "${MIN_RATIO:-0}"
