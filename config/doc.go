// Package config reads the server's configuration file.
//
// The file is YAML. Every key is optional, and an empty file (or one with
// only comments) is the default configuration, the one Default returns.
// A typical file:
//
//	sections: [planning]            # which built-in sections are on, in this order
//	planning:
//	  strategy: react               # react | plan_act_reflect | goal_decompose_route_synthesise
//	policies:
//	  sequential_dependency:        # server-wide: tool -> tools that must have succeeded first
//	    planning_add_step: [planning_read_plan]
//	deadline: 30s                   # per-call deadline
//
// The keys are:
//
//   - sections: the built-in sections that are on, in this order; the
//     server's default set when absent.
//   - planning.strategy: react, plan_act_reflect or
//     goal_decompose_route_synthesise.
//   - policies.sequential_dependency: maps a tool name to a non-empty list
//     of the tools that must have succeeded before it may be called.
//   - policies.read_before_write: whether a file must be read before it is
//     overwritten; true by default.
//   - deadline: the deadline of one tool call, as a Go duration such as
//     "30s" or "1m30s"; 30s by default.
//   - workspace.backend: memory (the default) or disk.
//   - workspace.root: the directory of the workspace; required when backend
//     is disk and not allowed otherwise.
//   - workspace.mounts: host directories copied into the workspace, each
//     with host (required), path, include and exclude (glob patterns) and
//     follow_symlinks.
//   - workspace.max_bytes: the byte budget of the mounts; 64 MiB by default.
//   - workspace.allowed_roots: when set, the only host directories mounts
//     may read from.
//   - workspace.max_file_bytes: the largest file the workspace tools write,
//     read or search; 32 MiB by default.
//   - hooks: the lifecycle stages around every tool call (see package
//     hooks): authorise, rate_limit, concurrency, cache, retry, output,
//     audit, metrics, secrets, and per-tool settings under hooks.tools.NAME. Durations
//     are Go durations, redaction patterns RE2 regular expressions, and
//     principals "*", "subject:NAME" or "scope:NAME".
//   - http.addr: serve remote clients over HTTP on this address instead of
//     stdio; http.insecure allows a non-loopback address without
//     authentication.
//   - http.allowed_origins, http.allowed_hosts: the browser origins and
//     Host names accepted besides loopback ones.
//   - http.max_body_bytes (4 MiB), http.session_ttl (30m),
//     http.drain_timeout (30s), http.sse_retry (1s): limits and timings;
//     the durations are Go durations greater than zero.
//   - http.base_path, http.public_url: where a reverse proxy serves the
//     server, for the SSE endpoint and the OAuth metadata.
//   - http.auth.bearer_token_file: static bearer tokens, one per line;
//     http.auth.jwt.jwks_url, .issuer, .audience (all three required) and
//     .scopes: JWT validation against an authorization server's keys.
//
// The command-line flags --http, --insecure, --allowed-origins,
// --allowed-hosts, --max-body-bytes, --session-ttl, --bearer-token-file,
// --jwks-url, --jwt-issuer and --jwt-audience override these keys.
//
// The file example.yaml in this package shows every key.
//
// Parse and Load check the file against a JSON Schema (schema.json, embedded
// in the program) and a few rules the schema cannot express. Anything
// unexpected is an error, never silently ignored: an unknown key, a value of
// the wrong type or out of range, a duplicate key, YAML anchors, aliases
// and merge keys, or several documents in one file. Each problem is a
// *KeyError naming the file, the key and its line, such as
//
//	config.yaml:3: planning.strategy: must be one of: react, plan_act_reflect, goal_decompose_route_synthesise
//
// and when there are several they come together as Errors, sorted by line.
//
// To add a key, describe it in schema.json and add a json-tagged field for it
// to Config or one of the types under it.
package config
