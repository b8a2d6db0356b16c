package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// HandleMessage passes the JSON-RPC message msg to srv, the server's MCP
// side (Server.MCP), and answers as MCP says two requests mcp-go answers
// otherwise; a transport hands every message it reads to it.
//
// A tools/call whose arguments hold a number beyond float64 (1e999) is one
// mcp-go cannot decode: it refuses it as an invalid request (-32600)
// before the tool is looked up. It is passed again with empty arguments,
// and the tool's handler takes the arguments as sent (rawArgs), so that
// the call fails validation with an isError result, is recorded and
// audited like any call with an invalid argument.
//
// A resources/read of a resource that does not exist, which the handler of
// a template that matched reports (resourceNotFound), is one mcp-go
// answers as an internal error (-32603): it is answered as mcp-go answers
// a URI that no handler matches, "resource not found" (-32002; -32602 from
// protocol revision 2026-07-28).
func HandleMessage(ctx context.Context, srv *mcpserver.MCPServer, msg json.RawMessage) mcp.JSONRPCMessage {
	var missing atomic.Int64
	resp := srv.HandleMessage(context.WithValue(ctx, notFoundKey{}, &missing), msg)
	e, ok := resp.(mcp.JSONRPCError)
	switch {
	case !ok:
	case e.Error.Code == mcp.INTERNAL_ERROR && missing.Load() != 0:
		e.Error.Code = int(missing.Load())
		return e
	case e.Error.Code == mcp.INVALID_REQUEST:
		if fixed, args, ok := undecodableArguments(msg); ok {
			return srv.HandleMessage(context.WithValue(ctx, rawArgsKey{}, args), fixed)
		}
	}
	return resp
}

// notFoundKey is the context key of the JSON-RPC error code of a resource
// read that found nothing, set by resourceNotFound; rawArgsKey that of the
// arguments of a tools/call as sent, when mcp-go could not decode them.
type (
	notFoundKey struct{}
	rawArgsKey  struct{}
)

// resourceNotFound is the error a resource handler returns for uri, a
// resource that does not exist; why, when not empty, says more. It tells
// HandleMessage the code of its answer: -32002, or -32602 for a request of
// protocol revision 2026-07-28 or later.
func resourceNotFound(ctx context.Context, uri, why string) error {
	if code, ok := ctx.Value(notFoundKey{}).(*atomic.Int64); ok {
		c := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(mcpserver.RequestProtocolVersion(ctx)) {
			c = mcp.INVALID_PARAMS
		}
		code.Store(int64(c))
	}
	return fmt.Errorf("%s%s: %w", uri, why, mcpserver.ErrResourceNotFound)
}

// undecodableArguments reports whether msg is a tools/call whose arguments
// are valid JSON that does not decode into Go values (a number beyond
// float64), and returns it with empty arguments, and the arguments.
func undecodableArguments(msg json.RawMessage) (json.RawMessage, json.RawMessage, bool) {
	var req map[string]json.RawMessage
	var params map[string]json.RawMessage
	var method string
	if json.Unmarshal(msg, &req) != nil || json.Unmarshal(req["method"], &method) != nil || method != string(mcp.MethodToolsCall) ||
		json.Unmarshal(req["params"], &params) != nil {
		return nil, nil, false
	}
	args := params["arguments"]
	var v any
	if !json.Valid(args) || json.Unmarshal(args, &v) == nil {
		return nil, nil, false
	}
	params["arguments"] = json.RawMessage("{}")
	p, err := json.Marshal(params)
	if err != nil {
		return nil, nil, false
	}
	req["params"] = p
	fixed, err := json.Marshal(req)
	if err != nil {
		return nil, nil, false
	}
	return fixed, args, true
}
