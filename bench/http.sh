#!/usr/bin/env bash
# bench/run.sh over Streamable HTTP: each server is started with
# --http 127.0.0.1:PORT, and the calls in flight go over one session
# (SESSIONS spreads them over more). Takes the environment of bench/run.sh.
set -euo pipefail
export TRANSPORT=http
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$@"
