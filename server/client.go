package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// client is the tools.Client of a call: it sends server-initiated requests
// through mcp-go, which routes them to the client session in the request's
// context, and closes the call's stream through the closer its transport
// put in that context.
type client struct {
	srv *mcpserver.MCPServer
	ctx context.Context // the request's context, for the stream closer
}

func (c client) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return c.srv.RequestSampling(ctx, req)
}

func (c client) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return c.srv.RequestElicitation(ctx, req)
}

func (c client) CloseStream() {
	if fn, ok := c.ctx.Value(streamCloserKey{}).(func()); ok {
		fn()
	}
}

type streamCloserKey struct{}

// WithStreamCloser returns ctx carrying close, which ends the response
// stream of the request ctx belongs to. Transports whose responses are
// resumable streams (Streamable HTTP with SSE) set it on each request so
// that a handler can ask the client to reconnect and resume
// (tools.Client.CloseStream).
func WithStreamCloser(ctx context.Context, close func()) context.Context {
	return context.WithValue(ctx, streamCloserKey{}, close)
}
