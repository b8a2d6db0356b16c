package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/tools"
)

// client is the tools.Client of a call. For a client of the 2025-11-25 era
// it sends server-initiated requests through mcp-go, which routes them to
// the client session in the request's context; for one of the 2026-07-28
// era it answers from the answers the call brought, or leaves the question
// pending (asking; see input.go). It closes the call's stream through the
// closer its transport put in that context.
type client struct {
	srv    *mcpserver.MCPServer
	ctx    context.Context // the request's context
	asking *asking         // nil for a client of the 2025-11-25 era
}

func (c *client) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if !c.declared(func(caps mcp.ClientCapabilities) bool { return caps.Sampling != nil }) {
		return nil, fmt.Errorf("sampling: %w: the client did not declare the sampling capability", tools.ErrNoClient)
	}
	if c.asking == nil {
		//lint:ignore SA1019 clients of protocol revisions before 2026-07-28 still ask for sampling, and this is how mcp-go sends it to them.
		return c.srv.RequestSampling(ctx, req)
	}
	raw, err := c.asking.ask(mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err != nil {
		return nil, err
	}
	return DecodeSamplingResult(raw)
}

// DecodeSamplingResult decodes a client's answer to sampling/createMessage,
// its content into the content type it names.
func DecodeSamplingResult(raw json.RawMessage) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode sampling result: %w", err)
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("parse sampling result content: %w", err)
	}
	res.Content = content
	return &res, nil
}

func (c *client) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if !c.declared(func(caps mcp.ClientCapabilities) bool { return caps.Elicitation != nil }) {
		return nil, fmt.Errorf("elicitation: %w: the client did not declare the elicitation capability", tools.ErrNoClient)
	}
	if c.asking == nil {
		res, err := c.srv.RequestElicitation(ctx, req)
		if errors.Is(err, mcpserver.ErrElicitationNotSupported) || errors.Is(err, mcpserver.ErrNoActiveSession) {
			err = fmt.Errorf("elicitation: %w: %v", tools.ErrNoClient, err)
		}
		return res, err
	}
	if err := req.Params.Validate(); err != nil {
		return nil, err
	}
	raw, err := c.asking.ask(mcp.NewElicitationInputRequest(req.Params))
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode elicitation result: %w", err)
	}
	return &res, nil
}

// declared reports whether the client declared a capability has says it
// has: in the request's _meta (2026-07-28) or when its session was
// initialised. A session that does not keep what its client declared is
// taken to have it; a request without a session has none.
func (c *client) declared(has func(mcp.ClientCapabilities) bool) bool {
	if c.asking != nil {
		info := mcpserver.RequestProtocolInfoFromContext(c.ctx)
		return info != nil && info.ClientCapabilities != nil && has(*info.ClientCapabilities)
	}
	cs := mcpserver.ClientSessionFromContext(c.ctx)
	if cs == nil {
		return false
	}
	ci, ok := cs.(mcpserver.SessionWithClientInfo)
	return !ok || has(ci.GetClientCapabilities())
}

func (c *client) CloseStream() {
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
