package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/tools"
)

// overrunGrace is how long after its deadline a call may take to return
// before it is answered without it (tools.Bound). A handler that honours
// its context returns well within it, its transaction restored.
const overrunGrace = time.Second

// A Reply sends the response to one request, once. A transport makes one
// for each request it hands to HandleMessage, puts it in the request's
// context (Context), and gives it the response HandleMessage returns
// (Send). Through it the server answers a tool call that overran its
// deadline while its handler still runs (a handler stuck in a system
// call), from where the response is written, without waiting for the
// handler: the response HandleMessage returns for it later is dropped, and
// so is anything the call sends after. A request without a Reply is
// answered when its handler returns.
type Reply struct {
	id   mcp.RequestId
	send func(resp mcp.JSONRPCMessage, early bool)
	mu   sync.Mutex // held while a response is sent
	sent atomic.Bool
}

// NewReply returns the Reply of the request whose JSON-RPC id is id, which
// sends a response with send; early is set for the answer to a call whose
// handler still runs (an HTTP transport then closes the connection after
// the response, as the handler keeps it).
func NewReply(id json.RawMessage, send func(resp mcp.JSONRPCMessage, early bool)) *Reply {
	return &Reply{id: mcp.NewRequestId(id), send: send}
}

// replyKey is the context key of how a call that overruns its deadline
// is answered: a *Reply, through which a transport answers a request, or
// an answer func, which ends a task (runTask).
type replyKey struct{}

type answer = func(*tools.Call, *tools.Outcome)

// Context returns ctx carrying r.
func (r *Reply) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, replyKey{}, r)
}

// Send sends resp, unless a response was sent already; a nil resp (the
// answer to a notification) sends nothing. It reports whether it sent. It
// returns once the response sent is written, this one or the one sent
// early from another goroutine, so that the transport may end the
// request after it.
func (r *Reply) Send(resp mcp.JSONRPCMessage) bool { return r.deliver(resp, false) }

func (r *Reply) deliver(resp mcp.JSONRPCMessage, early bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if resp == nil || r.sent.Load() {
		return false
	}
	r.sent.Store(true)
	r.send(resp, early)
	return true
}

// Sent reports whether a response was sent: a transport drops what the
// request's call sends afterwards.
func (r *Reply) Sent() bool { return r.sent.Load() }

// overruns is the stage that answers every call by its deadline, and
// holds, by session, the last call answered at its deadline while its
// handler still ran: until the handler returns, the call keeps its
// session's call lock, and the calls that wait for it say why.
type overruns struct {
	s    *Server
	held sync.Map // *session.Session → *tools.Call
}

var _ tools.Bounder = (*overruns)(nil)

// stage is the tools.Bound stage that answers every call by its deadline.
func (o *overruns) stage() tools.Middleware { return tools.Bound(overrunGrace, o) }

// Answerer implements tools.Bounder: a call is answered through its
// request's Reply, as the response of the request would be.
func (o *overruns) Answerer(ctx context.Context) func(*tools.Call, *tools.Outcome) {
	var r *Reply
	switch v := ctx.Value(replyKey{}).(type) {
	case answer:
		return v
	case *Reply:
		r = v
	default:
		return nil
	}
	return func(call *tools.Call, out *tools.Outcome) {
		res := o.s.render(call, out, "")
		if mcpserver.IsModernRequest(ctx) {
			// As mcp-go marks the results it returns to such a client.
			res.SetResultType(mcp.ResultTypeComplete)
			res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: o.s.name, Version: o.s.version})
		}
		r.deliver(mcp.NewJSONRPCResultResponse(r.id, res), true)
	}
}

// Overrun implements tools.Bounder.
func (o *overruns) Overrun(ctx context.Context, call *tools.Call) *tools.Outcome {
	o.held.Store(call.Session, call)
	call.Logger.Error("the call ignores its deadline: answered without it; it keeps its session until it returns", "deadline", call.Deadline)
	return interrupted(call, ctx.Err())
}

// Returned implements tools.Bounder.
func (o *overruns) Returned(call *tools.Call, _ *tools.Outcome) {
	o.held.CompareAndDelete(call.Session, call)
	call.Logger.Warn("a call that overran its deadline returned; its changes are restored", "overran", time.Since(call.Deadline).Round(time.Millisecond))
}

// waited is the outcome of a call whose context ended (err) while it
// waited for its session's call lock.
func (o *overruns) waited(call *tools.Call, err error) *tools.Outcome {
	out := interrupted(call, err)
	if v, ok := o.held.Load(call.Session); ok {
		held := v.(*tools.Call)
		out.Message += fmt.Sprintf(" Its session is held by call %s of '%s', which overran its deadline by %s and is still running; call again later, or in another session.",
			held.ID, held.Tool.Name(), time.Since(held.Deadline).Round(time.Second))
	}
	return out
}
