package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// overrunGrace is how long after its deadline a call may take to return
// before it is answered without it (tools.Bound). A handler that honours
// its context returns well within it, its transaction restored.
const overrunGrace = time.Second

// overruns holds, by session, the last call answered at its deadline
// while its handler still ran: until the handler returns, the call keeps
// its session's call lock, and the calls that wait for it say why.
type overruns struct{ held sync.Map } // *session.Session → *tools.Call

// stage is the tools.Bound stage that answers every call by its deadline.
func (o *overruns) stage() tools.Middleware {
	return tools.Bound(overrunGrace, func(ctx context.Context, call *tools.Call, done <-chan struct{}) *tools.Outcome {
		o.held.Store(call.Session, call)
		call.Logger.Error("the call ignores its deadline: answered without it; it keeps its session until it returns", "deadline", call.Deadline)
		go func() {
			<-done
			o.held.CompareAndDelete(call.Session, call)
			call.Logger.Warn("a call that overran its deadline returned; its changes are restored", "overran", time.Since(call.Deadline).Round(time.Millisecond))
		}()
		return interrupted(call, ctx.Err())
	})
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
