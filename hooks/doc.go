// Package hooks holds the lifecycle stages that run around every tool call,
// each a tools.Middleware with one job. The server composes them into its
// pipeline through named slots (server.Options.Stages); outermost first:
//
//	finalise     (the server's tools.Finalise) runs what stages registered with call.Finally
//	metrics      Metrics: calls, errors, latency, in-flight gauges (Prometheus)
//	audit        Audit: every ToolInvoked, redacted, to the log and a JSON-lines file
//	record       (the server's) ToolInvoked to the session's log
//	output       CapOutput, Redact, ValidateOutput: what the model sees
//	authorise    Authorise: allow and deny lists by identity; hidden tools (Visible)
//	rate_limit   RateLimit: token buckets per session and tool, quotas
//	concurrency  Concurrency: slots per tool and server-wide
//	cache        Cache: per-session results of read-only, idempotent tools
//	input        Normalise: trim argument strings, for the tools that ask
//	validate, deadline, serialise, policies (the server's)
//	retry        Retry: transient errors of idempotent tools, each attempt its own transaction
//	transaction, handler (the server's)
//
// # Control signals
//
// A stage controls the call by what it returns. It responds by returning an
// outcome without calling the next stage (the cache, on a hit, with
// call.Cached set). It aborts by returning tools.Failure with a class and a
// reason (authorise, quota). It asks the client to retry after a delay by
// returning tools.RetryAfter, which puts the delay in the result's _meta as
// well as in the text (rate limit). Whatever it took on the way in (a
// semaphore slot, a quota unit) it releases in a finaliser
// (call.Finally), which the server runs once the call is over, on every
// path, panics included. OnError and Finally wrap a function as a stage.
//
// # Configuration
//
// Config is the server-wide settings and per-tool ones (Config.Tools); New
// checks them against the tools the server offers and reports every
// problem as a ConfigError naming its key. Each accessor (Metrics, Audit,
// Output, Authorise, RateLimit, Concurrency, Cache, Normalise, Retry)
// returns its stage, or nil when the configuration leaves it off; Stages
// returns those that are on by the name of their server slot. Defaults turns on
// the metrics, the audit to the log, the output cap (100 KiB of text) and a
// server-wide limit of 64 calls in flight; the rest is off.
//
// Per tool: authorise.allow replaces the server's list and authorise.deny
// adds to it; a tool's rate limit, quota and concurrency limit apply on top
// of the server's (a bucket, quota and semaphore of its own); cache and
// retry turn on or off for the tool, and only a read-only, idempotent tool
// may be cached, only an idempotent one retried; output redaction patterns
// add up, the other output settings replace the server's.
//
// # Secrets
//
// Secrets (Config.Secrets) are read from the environment or from files at
// startup, shared with handlers through the session registry (Setup, as
// server.Options.Setup) and read with Secret; they never travel through the
// model's arguments, and their values are redacted like the patterns.
//
// # Identity
//
// Authorise reads who is calling from the request context (package
// identity): the HTTP transport puts there the subject and scopes of the
// request's bearer token, and the stdio server the local user. A request
// without an identity is anonymous: it matches only "*".
//
// # Audit file
//
// The audit file holds one JSON object per line (AuditRecord), in the
// order of the calls. A call writes its audit log line itself, as any log
// line, and hands its file record to the auditor, which writes the file
// lines a batch at a time, off the call's path, within 2 ms, with one write
// call on a file opened with O_APPEND: a crash of the server loses at most
// those last records, and calls never wait for the disk. With Fsync
// "always" a call instead writes its record and syncs the file before its
// result is returned. Fsync says when the file is synced to disk: after
// every record (always), once a second (interval, the default) or when it
// is closed (never). A partial last line, left by
// a crash of the machine, is cut off when the file is opened again and
// skipped by ReadAudit; the records before it are never touched. Close
// writes what is pending.
//
// # Cost
//
// TestHooksOverhead compares the server with every stage on (none refusing,
// caching or retrying) against the server without any, as ratios of
// wall-clock and CPU time per call measured in alternating rounds of one
// run; bench/hooks.sh compares the binaries over stdio; the README has the
// figures. Most of the cost is the audit sinks' formatting: the log line's
// on the call's path, the file line's off it. The output stages look at a result's Go value: the output
// schema check tells from its type what the schema asks, and redaction
// encodes it only when a pattern may match one of its strings.
package hooks
