package hooks

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/wink-mcp/wink-mcp/tools"
)

// ConcurrencyConfig bounds the calls in flight: server-wide, or per tool
// in ToolConfig, on top.
type ConcurrencyConfig struct {
	MaxInFlight int `json:"max_in_flight" jsonschema:"The most calls in flight at once; 0 means no limit." schema:"minimum=0"`
}

// Concurrency returns the concurrency stage: at most MaxInFlight calls of
// a tool, and at most MaxInFlight calls of all tools, run at once
// (golang.org/x/sync/semaphore). A call waits for a slot until its
// deadline, then is refused:
//
//	Tool 'x' could not start before its deadline (30s): 64 calls already in flight.
//
// The slots are released when the call is over (a finaliser), whatever
// happened. Nil when no limit is set.
func (h *Hooks) Concurrency() tools.Middleware {
	if !h.concurrency {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			p := h.plan(call.Tool)
			if p.toolSem != nil {
				if out := acquire(ctx, call, p.toolSem, p.toolSemN, "calls of it"); out != nil {
					return out
				}
			}
			if h.serverSem != nil {
				if out := acquire(ctx, call, h.serverSem, h.serverSemN, "calls"); out != nil {
					return out
				}
			}
			return next(ctx, call)
		}
	}
}

// acquire takes a slot of sem (of n), waiting for it until the call's
// deadline, and registers a finaliser that gives it back; it returns the
// refusal when no slot came free. A free slot is taken even when the
// deadline has passed: the deadline stage refuses such a call, with a
// message that says so.
func acquire(ctx context.Context, call *tools.Call, sem *semaphore.Weighted, n int, what string) *tools.Outcome {
	if !sem.TryAcquire(1) {
		wait := ctx
		if !call.Deadline.IsZero() {
			var cancel context.CancelFunc
			wait, cancel = context.WithDeadline(ctx, call.Deadline)
			defer cancel()
		}
		if err := sem.Acquire(wait, 1); err != nil {
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return tools.Failure(tools.ClassCancelled, fmt.Sprintf("Tool '%s' was cancelled.", call.Tool.Name()))
			}
			return tools.Failure(tools.ClassBusy, fmt.Sprintf("Tool '%s' could not start before its deadline (%s): %d %s already in flight.", call.Tool.Name(), call.Timeout, n, what))
		}
	}
	call.Finally(func(*tools.Outcome) { sem.Release(1) })
	return nil
}
