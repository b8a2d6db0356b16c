// Package transport serves the MCP server over stdio (ServeStdio) and to
// remote clients over HTTP (NewHTTP): Streamable HTTP at /mcp and the legacy
// HTTP+SSE transport at /sse and /message on one listener, behind the
// security checks of Security (Host, Origin, body size, bearer tokens,
// JWT), each a small middleware of its own.
//
// ServeStdio speaks newline-delimited JSON-RPC on a reader and a writer and
// dispatches every message to a mark3labs/mcp-go MCPServer. It does not use
// mcp-go's own StdioServer (v1.2.1), which fails the end-to-end tests when
// put in its place. Its defects, each with the frames that show it:
//
//   - A response overtakes its call's notifications: they are written by a
//     goroutine of their own. Send logging/setLevel "info", then a
//     tools/call whose tool sends progress or log notifications (or
//     resources/subscribe to a resource, then a call that changes it): the
//     response comes first and its notifications after it.
//   - initialize is handled on a goroutine like any request. Send
//     initialize and a ping (or a line that is not JSON) in one write: the
//     ping's response (or the parse error) can be written before initialize's.
//   - Lines are read with ReadString('\n'), without a limit. A 256 MiB
//     tools/call line is read whole and served (the process grows to
//     800 MB), where a 16 MiB cap refuses it with -32600.
//   - End of input cancels the calls in flight instead of letting them
//     finish. Send initialize and a tools/call, then close stdin: the call
//     ends "was cancelled"; of 100 calls written before EOF, none succeeds.
//     A pending sampling request fails with "context canceled".
//   - Its session is a package-level singleton, so two servers in one
//     process share one client: after two StdioServers are each initialized,
//     the first one's tools see the second client's name.
//   - Messages that are not valid requests are not refused: an id of
//     {"a":1}, [1] or true is echoed back with a result; {"jsonrpc":"2.0"}
//     (no method, no id) gets no response at all.
//
// ServeStdio instead writes every frame from one goroutine that is also the
// only reader of the session's notification channel and writes the
// notifications queued before each response; it handles initialize before
// reading the next line, caps line length, drains in-flight requests on end
// of input and on cancellation, creates one session per call, and answers
// invalid messages with JSON-RPC errors.
//
// Over HTTP, requests of the stateless 2026-07-28 era go to mcp-go's
// Streamable HTTP handler, which serves each on its own. The session-based
// era (2025-11-25 and before) is served here: each request has a view of
// the client session of its own, so that its progress and log
// notifications and its server→client requests travel on its own response
// and before it, while notifications to the session as a whole
// (list_changed, resources/updated) go on the standalone GET stream. It
// does not use mcp-go's StreamableHTTPServer (stateful, with WithEventStore
// and WithSessionIdleTTL) or SSEServer, which have these defects, each
// shown by an exchange with v1.2.1:
//
//   - A session's concurrent requests share one notification channel, and
//     each POST forwards from it: two tools/call POSTs on one
//     Mcp-Session-Id, each sending progress, get each other's
//     notifications/progress events on their SSE responses, or none.
//   - sampling/createMessage and roots/list requests are queued for the
//     standalone GET stream only: a tools/call POST whose tool asks for
//     sampling, from a client with no GET stream open, never shows the
//     request to the client, and the call waits out its deadline.
//   - A response stream has no priming event (ID and retry) and a handler
//     cannot close it mid-call: a tools/call POST to a tool that asks to
//     close its stream gets one application/json response at the end, and
//     the conformance scenario server-sse-polling runs none of its checks.
//   - The idle TTL runs from a request's start: with WithSessionIdleTTL(1s)
//     a tools/call that takes 4s loses its session mid-call, and a ping on
//     that session meanwhile gets 404.
//   - A POST without Mcp-Session-Id gets 404, where the specification asks
//     for 400; and the stateful session manager keeps every ended session's
//     ID for ever.
//   - SSEServer moves notifications to the stream on a goroutine of their
//     own while the response is queued directly: POST /message with a
//     tools/call that sends progress gets the response on the GET /sse
//     stream before the notifications/progress events. Its session cannot
//     send sampling or elicitation requests at all.
//
// Response streams here are resumable: each begins with a priming event,
// its events are recorded, and a client that lost the connection, or whose
// stream the server closed (tools.Client.CloseStream), gets the rest with
// GET and Last-Event-ID. Unknown sessions get 404 and a missing
// Mcp-Session-Id 400; idle sessions (nothing in flight, no stream open) end
// after SessionTTL; DELETE ends one; every end of a session unregisters it
// from mcp-go, so the server's state for it ends too.
package transport
