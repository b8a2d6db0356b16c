package hooks

import (
	"context"

	"github.com/wink-mcp/wink-mcp/tools"
)

// The finalise stage is the server's outermost stage, tools.Finalise: it
// runs the finalisers stages register with call.Finally, after the call's
// outcome is known, whatever happened (panics included). Rate limit and
// concurrency release their quota units and semaphore slots that way. The
// two constructors below are the error and finalise hooks for a user of the
// Go API.

// OnError returns a stage that calls fn with every failed outcome of the
// stages inside it, whatever its class: a refusal by a stage, a policy
// denial, a failure, an error or a panic of the tool.
func OnError(fn func(ctx context.Context, call *tools.Call, out *tools.Outcome)) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			out := next(ctx, call)
			if !out.Success {
				fn(ctx, call, out)
			}
			return out
		}
	}
}

// Finally returns a stage that has fn run when the call is over, with the
// outcome the client gets, whatever happened (see tools.Call.Finally).
func Finally(fn func(call *tools.Call, out *tools.Outcome)) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			call.Finally(func(out *tools.Outcome) { fn(call, out) })
			return next(ctx, call)
		}
	}
}
