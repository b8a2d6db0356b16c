// Package transport serves the MCP server over stdio (ServeStdio) and to
// remote clients over HTTP (NewHTTP): Streamable HTTP at /mcp and the legacy
// HTTP+SSE transport at /sse and /message on one listener, behind the
// security checks of Security (Host, Origin, body size, bearer tokens,
// JWT), each a small Middleware of its own. See HTTP for why the
// session-based protocol era is served here rather than by mcp-go's
// handlers.
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
package transport
