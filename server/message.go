package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/telemetry"
)

// HandleMessage passes the JSON-RPC message msg to srv, the server's MCP
// side (Server.MCP), and answers as MCP says two requests mcp-go answers
// otherwise; a transport hands every message it reads to it.
//
// A tools/call whose arguments or _meta hold a number beyond float64
// (1e999) is one mcp-go cannot decode: it refuses it as an invalid request
// (-32600) before the tool is looked up. It is passed again with empty
// arguments and, in _meta, null for each value that does not decode; the
// tool's handler takes the arguments as sent (rawArgs) and those values
// (readMeta), so that the call fails validation with an isError result,
// is recorded and audited like any call with an invalid argument or
// _meta key.
//
// A resources/read of a resource that does not exist, which the handler of
// a template that matched reports (resourceNotFound), is one mcp-go
// answers as an internal error (-32603): it is answered as mcp-go answers
// a URI that no handler matches, "resource not found" (-32002; -32602 from
// protocol revision 2026-07-28).
//
// The task methods (tasks/get, tasks/result, tasks/list, tasks/cancel,
// tasks/update) are answered by the server's tasks, and a tools/call run
// as a task is answered with the task (see tasks.go): mcp-go's own tasks
// are not used.
func HandleMessage(ctx context.Context, srv *mcpserver.MCPServer, msg json.RawMessage) mcp.JSONRPCMessage {
	return serveTasks(ctx, srv, msg, handle)
}

// handle is HandleMessage for everything but tasks.
func handle(ctx context.Context, srv *mcpserver.MCPServer, msg json.RawMessage) mcp.JSONRPCMessage {
	var missing atomic.Int64
	resp := srv.HandleMessage(context.WithValue(ctx, notFoundKey{}, &missing), msg)
	e, ok := resp.(mcp.JSONRPCError)
	switch {
	case !ok:
	case e.Error.Code == mcp.INTERNAL_ERROR && missing.Load() != 0:
		e.Error.Code = int(missing.Load())
		return e
	case e.Error.Code == mcp.INVALID_REQUEST:
		if fixed, raw, ok := undecodable(msg); ok {
			return srv.HandleMessage(context.WithValue(ctx, rawKey{}, raw), fixed)
		}
	}
	return resp
}

// notFoundKey is the context key of the JSON-RPC error code of a resource
// read that found nothing, set by resourceNotFound; rawKey that of the
// parts of a tools/call mcp-go could not decode (sent).
type (
	notFoundKey struct{}
	rawKey      struct{}
)

// sent holds the parts of a tools/call that mcp-go could not decode, as
// the client sent them: the arguments, when they are among them, and the
// values of _meta that are.
type sent struct {
	args json.RawMessage
	meta map[string]json.RawMessage
}

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
		telemetry.SetErrorCode(ctx, c)
	}
	return fmt.Errorf("%s%s: %w", uri, why, mcpserver.ErrResourceNotFound)
}

// undecodable reports whether msg is a tools/call whose arguments or _meta
// values are valid JSON that does not decode into Go values (a number
// beyond float64). It returns msg with those parts replaced (the arguments
// by {}, each such _meta value by null), and the parts as sent.
func undecodable(msg json.RawMessage) (json.RawMessage, sent, bool) {
	var req, params map[string]json.RawMessage
	var method string
	if json.Unmarshal(msg, &req) != nil || json.Unmarshal(req["method"], &method) != nil || method != string(mcp.MethodToolsCall) ||
		json.Unmarshal(req["params"], &params) != nil {
		return nil, sent{}, false
	}
	var raw sent
	if args := params["arguments"]; json.Valid(args) && !decodes(args) {
		raw.args, params["arguments"] = args, json.RawMessage("{}")
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) == nil {
		for k, v := range meta {
			if !decodes(v) {
				if raw.meta == nil {
					raw.meta = map[string]json.RawMessage{}
				}
				raw.meta[k], meta[k] = v, json.RawMessage("null")
			}
		}
	}
	if raw.args == nil && raw.meta == nil {
		return nil, sent{}, false
	}
	var err error
	if raw.meta != nil {
		if params["_meta"], err = json.Marshal(meta); err != nil {
			return nil, sent{}, false
		}
	}
	if req["params"], err = json.Marshal(params); err != nil {
		return nil, sent{}, false
	}
	fixed, err := json.Marshal(req)
	if err != nil {
		return nil, sent{}, false
	}
	return fixed, raw, true
}

// decodes reports whether v, valid JSON, decodes into Go values.
func decodes(v json.RawMessage) bool {
	var x any
	return json.Unmarshal(v, &x) == nil
}
