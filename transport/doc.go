// Package transport serves the MCP server over stdio (ServeStdio) and to
// remote clients over HTTP (NewHTTP): Streamable HTTP at /mcp and the legacy
// HTTP+SSE transport at /sse and /message on one listener, behind the
// security checks of Security (Host, Origin, body size, bearer tokens,
// JWT), each a small Middleware of its own. See HTTP for why the
// session-based protocol era is served here rather than by mcp-go's
// handlers.
//
// ServeStdio speaks newline-delimited JSON-RPC on a reader and a writer and
// dispatches every message to a mark3labs/mcp-go MCPServer. It deliberately
// does not use mcp-go's own StdioServer, which has these defects:
//
//   - Notifications are written by a separate goroutine, so a tool call's
//     response can overtake the progress and log notifications the tool sent
//     before it returned.
//   - initialize is handled on a goroutine, so a pipelined tools/list can be
//     answered before it.
//   - Lines are read with ReadString('\n'), so a single line can grow without
//     bound.
//   - At end of input it cancels in-flight requests instead of letting them
//     finish.
//   - Its session is a package-level singleton, so two servers in one process
//     share state.
//
// ServeStdio instead writes every frame from one writer that flushes queued
// notifications before each response, handles initialize synchronously,
// caps line length, drains in-flight requests on shutdown, and creates one
// session per call.
package transport
