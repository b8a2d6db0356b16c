// Package server turns a section tree into an MCP server: it registers the
// tools with mcp-go, runs every call through the pipeline, finds each
// call's session (package sessions keeps them), and exposes guidance as
// instructions and prompts and session state as resources.
//
// # Sessions
//
// A session is named by a handle the server mints: "s_" and 26 base32
// characters from crypto/rand, never derived from what a client sends
// (--session may name a stdio process's session instead; see
// WithSessionName). The tools of a section keep state unless the section
// is Stateless (the conformance fixtures are): each of them takes an
// optional "session" argument, which the server adds to its advertised
// input schema (advertised, in handles.go, the one place) and removes from
// the arguments before they are validated and decoded. A harness may send
// the handle in the request's _meta under MetaSession instead; the
// argument wins. A call uses, in this order:
//
//  1. the session its handle names;
//  2. otherwise its connection's implicit session: the stdio process (a
//     stdio process is one client, whatever the protocol version of its
//     requests) or the protocol session of a legacy client over
//     Streamable HTTP or SSE, each with a handle of its own;
//  3. otherwise (a 2026-07-28 request over HTTP, which has no
//     connection) a new session when the call changes state (its tool is
//     not read-only); a read gets sessions.NoSessionMessage. A tool of a Stateless
//     section runs in an empty session of its own.
//
// A call that fails in a session started for it is not kept. When it failed
// for want of what the session lacks (a plan, a file of a memory
// workspace, a policy's memory: tools.Result.Missing), its error goes on
// with sessions.NewSessionMessage, so that a client that forgot to pass the
// handle back learns so rather than that its plan is gone.
//
// A handle that is malformed, unknown, expired, or bound to another
// principal (identity.Identity.Principal: the bearer token's subject, or
// the static token) gets sessions.UnknownSessionMessage, the same for all, and
// nothing is created under it. The successful result of a call that
// changes state names its session: a last line "Session: HANDLE" of its
// text and "session" in its structured content (and in the tool's output
// schema). The resource wink://session holds the handle of the
// connection's session. A session named by a handle alone ends after
// Options.SessionTTL idle; a connection's session ends with the
// connection. Sessions are kept in Options.Store (package sessions): a call
// that changed state commits the session's new state (package statetree)
// once, after its commit hooks, by compare-and-swap on the revision it
// loaded; a commit that another writer overtook is rolled back like any
// failure, and the call runs again on the latest revision if its tool's
// section is Contained (it touched nothing outside the session's state),
// at most maxRuns times, or else answers sessions.ChangedMessage
// (retryable); one the store fails answers sessions.StoreDownMessage. A
// handle unknown to this
// process is loaded from the store, so a session outlives the process.
// Several processes (replicas) may share a store: each watches it, drops
// the sessions it holds that another changed, and tells its clients
// subscribed to their resources.
//
// The store also keeps each session's call log: the record of every call
// (session.ToolInvoked; arguments, value and text cut when the record would
// exceed store.MaxValue), appended in batches after the call is answered,
// the last store.Options.LogRetention of them. LogURI lists them (session.CallSummary:
// tool, outcome, time and the start of the arguments) and CallURITemplate
// holds one call's record; both read the store, so they are the same after
// a restart and on every replica.
//
// Every tools/call passes these stages, each a tools.Middleware, in this
// order (the first is outermost); the slots between them (tools.Slot) hold
// the lifecycle stages of package hooks and any stage a user of the Go API
// adds through Options.Stages:
//
//	finalise     run the finalisers stages registered (releases), panics included
//	[SlotMetrics, SlotAudit]
//	record       make the call's ToolInvoked record, for the session's log
//	[SlotOutput, SlotAuthorise, SlotRateLimit, SlotConcurrency, SlotCache, SlotInput]
//	             then Options.Middleware
//	disclose     refuse a tool that a closed section hides from the
//	             session (progressive disclosure; see disclosure.go)
//	validate     check the arguments against the tool's schema, decode them
//	deadline     refuse a call whose deadline already passed; bound the rest
//	bound        have the call answered a second after its deadline even
//	             if the rest does not return, from where the response is
//	             written (tools.Bound, Reply); the session stays held
//	             until it does
//	serialise    one call per session from here to the commit or restore,
//	             or several calls of read-only tools together
//	new session  after a failure for want of what the session lacks
//	             (tools.Outcome.Missing), in a session started for the
//	             call, say that it is new and how to name the one meant
//	policies     the tool's section's policies, then the server-wide ones
//	steps        lets a handler that acts for other tools (apply_edits) have
//	             each step checked by that tool's policies (Call.Authorise)
//	consent      Options.Consent, when set: ask the user before a marked
//	             tool runs (package consent)
//	[SlotRetry]
//	transaction  snapshot (not for a read-only tool), run the handler,
//	             apply (commit hooks, store), commit or restore
//	[SlotExecute]
//
// A call goes in as a tools.Call, which carries the arguments and what the
// stages on the way in add to it (the decoded params, the deadline, the
// transaction); it comes back as a tools.Outcome, which carries the result
// and what the stages report about the call: the record stage writes the
// outcome's Cached, Retries and LoggedArgs into the call's ToolInvoked
// record, and leaves it on the outcome (Invocation) for the audit and for
// the session's log in the store, which the record reaches after the call
// is answered.
//
// The call's deadline is computed when the call is created, so that the
// stages before the deadline stage wait no longer than it; the deadline
// stage refuses the call if it has passed and cancels the handler's context
// when it does. A retry stage runs each attempt in its own transaction,
// inside the session lock. A panic in a stage of a slot becomes an
// internal-error outcome where it happens, so the stages outside it see a
// failed call like any other.
//
// Lookup happens before the pipeline: mcp-go answers an unknown tool with
// JSON-RPC error -32602, the only failure that is a protocol error. Every
// other failure is an isError result, and state is restored on every failure
// path, panics included. Rendering into content blocks happens after.
//
// A handler that outlives its deadline is waited for, a second at most:
// its context is cancelled at the deadline, and its result is replaced by
// the deadline error when it returns (followed by the handler's own
// failure message, if it returned one, so that it can say where it
// stopped). One that has not returned a second after the deadline is
// answered without it, from where the response is written (Reply), its
// audit line first, and runs on alone. The session stays locked until it
// returns, so nothing it does after the deadline can interleave with
// another call; the transaction restores whatever it did.
//
// A handler asks its client for input with tools.Context's Elicit and
// CreateMessage. A client of the 2025-11-25 era is sent the request and
// the call waits for the answer, inside its deadline and holding its
// session. A client of the 2026-07-28 era is answered input_required (see
// input.go): the call is rolled back, and runs again from the start when
// the client retries it with the answer, so a handler asks the same
// questions in the same order on every run, and only the last run commits.
// Every stage runs on every run: a rate limit or a quota counts each.
//
// A client may shorten a call's deadline with the request's _meta: either
// "io.github.wink-mcp/timeoutMs" (milliseconds from now) or
// "io.github.wink-mcp/deadline" (an RFC 3339 time). The earliest of these,
// the server's deadline and the request context's deadline wins; a
// malformed one fails the call at validation. The keys of the former prefix
// "io.wink-mcp/" are still read, and logged as deprecated.
package server
