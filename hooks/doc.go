// Package hooks holds the lifecycle stages that run around every tool call,
// each a tools.Middleware with one job. Stages returns those the
// configuration turns on, keyed by the pipeline slot each belongs in
// (tools.Slot), for server.Options.Stages. Outermost first, with the
// server's own stages between them, each stage by its name:
//
//	(server)         finalise: run the finalisers stages registered with call.Finally
//	SlotMetrics      metrics: calls, errors, latency, in-flight gauges (Prometheus)
//	SlotAudit        audit: every call's ToolInvoked event, redacted, to the log and a JSON-lines file
//	(server)         record: append ToolInvoked to the session's log
//	SlotOutput       cap_output, redact, validate_output: what the model sees;
//	                 deadline_reminder: feedback when a deadline is near
//	SlotAuthorise    authorise: allow and deny lists by identity, tools turned off by flags; hidden tools (Visible)
//	SlotRateLimit    rate_limit: token buckets per session and tool, quotas
//	SlotConcurrency  concurrency: slots per tool and server-wide
//	SlotCache        cache: per-session results of read-only, idempotent tools
//	SlotInput        normalise: trim argument strings, for the tools that ask
//	(server)         validate, deadline, serialise, policies, steps
//	SlotRetry        retry: transient errors of idempotent tools, each attempt its own transaction
//	(server)         transaction, the handler
//
// # Hooks
//
// Each stage is a Hook: a name, a slot, a priority within the slot, a
// Filter of the tools it runs for (name patterns, annotations) and the
// middleware. Config.Hooks adds a program's own among the built-in ones
// (the server adds the planning section's plan_reminder, off by default).
// Config.Stages changes, by name, whether a stage runs, its priority and
// its filter; within a slot, a higher priority runs further out, and
// stages of equal priority keep their order, the built-in ones first.
// Which tools a stage runs for is decided by New: a call of another tool
// passes it at the cost of a map lookup. Config.Flags turn stages and tools
// on or off per caller (principal and session), the last matching flag
// deciding; the authorise stage refuses a tool turned off, and Visible
// hides it from the principal's tools/list. A stage reads the session's
// last calls with call.History and adds feedback for the model with
// Outcome.AddFeedback.
//
// # Control signals
//
// A stage controls the call by what it returns. It responds by returning an
// outcome without calling the next stage (the cache, on a hit, marks it
// Cached). It aborts by returning tools.Failure with a class and a reason
// (authorise, quota). It asks the client to retry after a delay by
// returning tools.RetryAfter, which puts the delay in the result's _meta as
// well as in the text (rate limit). Whatever it took on the way in (a
// semaphore slot, a quota unit) it releases in a finaliser (call.Finally),
// which the server runs once the call is over, on every path, panics
// included. What a stage reports about the call goes on the outcome it
// returns: Cached (cache), Retries (retry), LoggedArgs (redaction); the
// audit reads the Invocation the server's record stage left there. OnError
// and Finally wrap a function as a stage.
//
// # Output
//
// The output stages work on what the client gets. Redaction replaces the
// matches of the patterns in the text, the message, extra text blocks and
// the value, in the value's JSON form (decoded, its strings and keys
// redacted; a changed value is kept in that generic form), and in the
// arguments as logged. Output validation marshals the value and validates
// it against the tool's output schema, inside the call's transaction, so a
// result that does not match fails the call and restores its state. The
// cap cuts the text last, so that its marker is never redacted.
//
// # Configuration
//
// Config is the server-wide settings and per-tool ones (Config.Tools); New
// checks them against the tools the server offers and reports every
// problem as a ConfigError naming its key. Each accessor (Metrics, Audit,
// Output, Authorise, RateLimit, Concurrency, Cache, Normalise, Retry)
// returns its stage, or nil when the configuration leaves it off; Stages
// returns those that are on by their slot. Defaults turns on
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
// order of the calls, written by log/slog's JSON handler to a file opened
// with O_APPEND, one write(2) per line. A call writes its file line
// itself, before its result is returned: a kill of the server (SIGKILL)
// loses no line of a call that was answered. Close (on exit) syncs and
// closes the file. What a crash of the machine loses, by Fsync:
//
//	always    nothing answered: a call's line is synced before its result is returned
//	interval  the lines of the last second at most (a ticker syncs once a second)
//	never     what the operating system had not yet written to the disk
//
// The lines lost are always the last ones, never an earlier one, and never
// part of a line: a partial last line, left by a server or a machine that
// died while writing it, is cut off when the file is opened again and
// skipped by ReadAudit; the records before it are never touched.
package hooks
