package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/telemetry"
)

// HandleMessage passes the JSON-RPC message msg to srv, the server's MCP
// side (Server.MCP), and answers as MCP says two requests mcp-go answers
// otherwise; a transport hands every message it reads to it.
//
// A tools/call reaches mcp-go with {} for its arguments, and the tool's
// handler takes them as sent (rawArgs): mcp-go decodes a message four
// times over, and a call's arguments, often the bulk of it (the content
// of a file), need decoding only by the tool that checks them. So a call
// whose arguments do not decode into Go values (a number beyond float64,
// 1e999) fails validation with an isError result, naming the argument.
// An mcp-go server that is not a Server's MCP side is given the message
// as it is.
//
// A tools/call whose _meta holds such a number is one mcp-go cannot
// decode: it refuses it as an invalid request (-32600) before the tool is
// looked up. It is passed again with null for each value of _meta that
// does not decode; the tool's handler takes those values as sent
// (readMeta), so that the call fails with an isError result, is recorded
// and audited like any call with an invalid _meta key.
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
//
// A transport that has decoded the message (ParseMessage) to route it
// hands it to Handle instead, so that it is decoded once.
func HandleMessage(ctx context.Context, srv *mcpserver.MCPServer, msg json.RawMessage) mcp.JSONRPCMessage {
	m, err := ParseMessage(msg)
	if err != nil {
		return srv.HandleMessage(ctx, msg) // mcp-go answers what is not a message
	}
	return Handle(ctx, srv, m)
}

// Handle is HandleMessage for a message that ParseMessage decoded.
func Handle(ctx context.Context, srv *mcpserver.MCPServer, m Message) mcp.JSONRPCMessage {
	return serveTasks(ctx, srv, m)
}

// Message is a JSON-RPC message decoded once, as far as routing it needs:
// its id and method, and where in it lie the parts of a tools/call that
// the server reads itself.
type Message struct {
	// ID is the id as sent: nil when there is none, null when null.
	ID json.RawMessage
	// Method is the method; "" for a response.
	Method string

	raw  json.RawMessage
	call callParts // of a tools/call's params that are an object
}

// callParts are values of a tools/call's params, each where it lies in
// the message (see place), or nil.
type callParts struct {
	Arguments place `json:"arguments"`
	Task      place `json:"task"`
	Meta      place `json:"_meta"`
}

// ParseMessage decodes msg, a JSON-RPC message. It fails with a
// *json.SyntaxError when msg is not JSON and a *json.UnmarshalTypeError
// when its method is not a string; params that are not an object are left
// for mcp-go to refuse. The Message holds msg, which must not change until
// Handle has returned.
func ParseMessage(msg json.RawMessage) (Message, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params callParts       `json:"params"`
	}
	err := json.Unmarshal(msg, &m)
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && (te.Field == "params" || strings.HasPrefix(te.Field, "params.")) {
		// Unmarshal reports the first such error only: the method may
		// have one too.
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		err = json.Unmarshal(msg, &env)
		m.ID, m.Method, m.Params = env.ID, env.Method, callParts{}
	}
	if err != nil {
		return Message{}, err
	}
	out := Message{ID: m.ID, Method: m.Method, raw: msg}
	if m.Method == string(mcp.MethodToolsCall) {
		out.call = m.Params
	}
	return out, nil
}

// Raw returns the message as it was read.
func (m Message) Raw() json.RawMessage { return m.raw }

// HasID reports whether the message carries an id that is not null: a
// request, or a response.
func (m Message) HasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) }

// handle is Handle for everything but tasks.
func handle(ctx context.Context, srv *mcpserver.MCPServer, m Message) mcp.JSONRPCMessage {
	msg := m.raw
	var raw sent
	var edits []edit // of the message mcp-go is given
	if _, ours := servers.Load(srv); ours && m.call.Arguments != nil {
		noArgs := edit{m.call.Arguments, []byte("{}")}
		if slim, ok := m.rewrite(noArgs); ok {
			msg, raw.args, edits = slim, bytes.Clone(m.call.Arguments), []edit{noArgs}
			ctx = context.WithValue(ctx, rawKey{}, raw)
		}
	}
	var missing atomic.Int64
	resp := srv.HandleMessage(context.WithValue(ctx, notFoundKey{}, &missing), msg)
	e, ok := resp.(mcp.JSONRPCError)
	switch {
	case !ok:
	case e.Error.Code == mcp.INTERNAL_ERROR && missing.Load() != 0:
		e.Error.Code = int(missing.Load())
		return e
	case e.Error.Code == mcp.INVALID_REQUEST:
		if meta, values, ok := undecodableMeta(json.RawMessage(m.call.Meta)); ok {
			if fixed, ok := m.rewrite(append(edits, edit{m.call.Meta, meta})...); ok {
				raw.meta = values
				return srv.HandleMessage(context.WithValue(ctx, rawKey{}, raw), fixed)
			}
		}
	}
	return resp
}

// notFoundKey is the context key of the JSON-RPC error code of a resource
// read that found nothing, set by resourceNotFound; rawKey that of the
// parts of a tools/call that mcp-go is not given (sent).
type (
	notFoundKey struct{}
	rawKey      struct{}
)

// sent holds the parts of a tools/call that mcp-go is not given, as the
// client sent them: the arguments, and the values of _meta that it could
// not decode.
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

// edit replaces a value of a message: at, a place decoded from it, by
// with.
type edit struct {
	at   place
	with []byte
}

// rewrite returns m's message with edits made, in the order of their
// places in it; false when a place is not in it, or places overlap.
func (m Message) rewrite(edits ...edit) (json.RawMessage, bool) {
	type at struct {
		start int
		edit
	}
	var ats []at
	size := len(m.raw)
	for _, e := range edits {
		start, ok := offset(m.raw, e.at)
		if !ok {
			return nil, false
		}
		ats = append(ats, at{start, e})
		size += len(e.with) - len(e.at)
	}
	slices.SortFunc(ats, func(a, b at) int { return a.start - b.start })
	out, next := make(json.RawMessage, 0, size), 0
	for _, a := range ats {
		if a.start < next {
			return nil, false
		}
		out = append(append(out, m.raw[next:a.start]...), a.with...)
		next = a.start + len(a.at)
	}
	return append(out, m.raw[next:]...), true
}

// place is a JSON value as it lies in the message being decoded:
// encoding/json hands an Unmarshaler the bytes of its value in the input,
// not a copy, which is where the value lies in it (offset checks that it
// was given no copy).
type place []byte

func (p *place) UnmarshalJSON(b []byte) error {
	*p = b
	return nil
}

// offset returns where v, a place decoded from msg, starts in msg; false
// when v is empty or not a slice of msg.
func offset(msg, v []byte) (int, bool) {
	if len(v) == 0 {
		return 0, false
	}
	start := cap(msg) - cap(v)
	if start < 0 || start+len(v) > len(msg) || &msg[start] != &v[0] {
		return 0, false
	}
	return start, true
}

// undecodableMeta reports whether meta, a tools/call's _meta as sent,
// holds values that are valid JSON that does not decode into Go values (a
// number beyond float64). It returns meta with each such value replaced
// by null, and the values as sent.
func undecodableMeta(meta json.RawMessage) (json.RawMessage, map[string]json.RawMessage, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(meta, &members) != nil {
		return nil, nil, false
	}
	var values map[string]json.RawMessage
	for k, v := range members {
		if !decodes(v) {
			if values == nil {
				values = map[string]json.RawMessage{}
			}
			values[k], members[k] = v, json.RawMessage("null")
		}
	}
	if values == nil {
		return nil, nil, false
	}
	fixed, err := json.Marshal(members)
	if err != nil {
		return nil, nil, false
	}
	return fixed, values, true
}

// decodes reports whether v, valid JSON, decodes into Go values.
func decodes(v json.RawMessage) bool {
	var x any
	return json.Unmarshal(v, &x) == nil
}
