package transport

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	winkserver "github.com/wink-mcp/wink-mcp/server"
)

// caller sends a request to the client and waits for the raw result.
type caller interface {
	call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// clientRequests implements mcp-go's server→client requests (sampling,
// elicitation, roots) on top of a caller, for every session type of the
// transports: each embeds it with itself as the caller.
type clientRequests struct {
	c caller
}

// RequestSampling asks the client to create a message and waits for the
// result.
func (r clientRequests) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, err := r.c.call(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams)
	if err != nil {
		return nil, err
	}
	return winkserver.DecodeSamplingResult(raw)
}

// RequestElicitation asks the client to elicit input from the user and
// waits for the result.
func (r clientRequests) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := r.c.call(ctx, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode elicitation result: %w", err)
	}
	return &res, nil
}

// ListRoots asks the client for its roots and waits for the result.
func (r clientRequests) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var params any
	if req.Params.Meta != nil {
		params = req.Params
	}
	raw, err := r.c.call(ctx, string(mcp.MethodListRoots), params)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode roots result: %w", err)
	}
	return &res, nil
}
