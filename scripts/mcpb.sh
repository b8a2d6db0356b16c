#!/usr/bin/env bash
# Installs the official MCP Bundle CLI, @anthropic-ai/mcpb at a pinned
# version, from the npm registry into .tools/mcpb (ignored by git), unless
# that version is there already, and prints the path of its cli.js, which
# runs with node (20 or newer). scripts/dist validates every bundle with
# it; .ci/run installs it so that the bundle test validates the bundle it
# builds (WINK_DIST_REQUIRE_MCPB=1).
set -euo pipefail
cd "$(dirname "$0")/.."

MCPB_VERSION=2.1.2
TOOLS=.tools/mcpb
pkg=$TOOLS/node_modules/@anthropic-ai/mcpb

installed=""
if [ -f "$pkg/package.json" ]; then
	installed=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$pkg/package.json" | head -1)
fi
if [ "$installed" != "$MCPB_VERSION" ]; then
	echo "== installing @anthropic-ai/mcpb@$MCPB_VERSION into $TOOLS" >&2
	mkdir -p "$TOOLS"
	[ -f "$TOOLS/package.json" ] || echo '{"private": true}' >"$TOOLS/package.json"
	npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error "@anthropic-ai/mcpb@$MCPB_VERSION" >&2
fi
node "$pkg/dist/cli/cli.js" --version >&2
echo "$PWD/$pkg/dist/cli/cli.js"
