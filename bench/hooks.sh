#!/usr/bin/env bash
# Compares the built binary with every lifecycle stage on (none refusing,
# answering from the cache or retrying; the audit to the log and to a file)
# with the same binary with every stage off, over stdio: what the stages
# cost a call as a client makes it. TestHooksOverhead (./hooks) measures
# the same in-process, against the pipeline alone.
#
# Environment: CALLS, ROUNDS, INFLIGHT, COLD as for bench/run.sh;
# AUDIT_FILE=0 leaves the audit file off (the audit then logs only, its
# default).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$root"
echo "building bench/load and wink-mcp..." >&2
go build -o "$tmp/load" ./bench/load
go build -o "$tmp/wink-mcp" .

cat >"$tmp/all.yaml" <<YAML
hooks:
  authorise: {allow: ["*"], deny: ["subject:mallory"]}
  rate_limit: {rate: 1000000000, burst: 1000000000, quota: 1000000000000}
  concurrency: {max_in_flight: 64}
  cache: {enabled: true}
  retry: {enabled: true}
  output:
    redact: ['sk-[A-Za-z0-9]{20,}', 'ghp_[A-Za-z0-9]{36}']
    validate: true
    max_text_bytes: 102400
  audit: {log: true$([ "${AUDIT_FILE:-1}" = 0 ] || echo ", file: \"$tmp/audit.jsonl\", fsync: interval")}
  metrics: {enabled: true}
  tools:
    planning_setup_plan:
      rate_limit: {rate: 1000000000, burst: 1000000000, quota: 1000000000000}
      concurrency: {max_in_flight: 16}
YAML
cat >"$tmp/none.yaml" <<YAML
hooks:
  concurrency: {max_in_flight: 0}
  output: {max_text_bytes: 0}
  audit: {log: false}
  metrics: {enabled: false}
YAML

wink="$(printf '%q' "$tmp/wink-mcp")"
"$tmp/load" --compare --quiet --calls "${CALLS:-20000}" --rounds "${ROUNDS:-3}" \
	--inflight "${INFLIGHT:-1,16}" --cold "${COLD:-0}" \
	--cmd "$wink --config $(printf '%q' "$tmp/all.yaml")" --label all-stages \
	--tool planning_setup_plan --args '{"objective":"bench","initial_steps":["a","b","c"]}' \
	--cmd2 "$wink --config $(printf '%q' "$tmp/none.yaml")" --label2 no-stages \
	--tool2 planning_setup_plan --args2 '{"objective":"bench","initial_steps":["a","b","c"]}'
