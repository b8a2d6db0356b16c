package tools

import (
	"context"
	"time"
)

// Bound returns a stage that answers by the context's end whatever the
// rest of the pipeline does. The rest runs in a goroutine of its own, on a
// copy of the call, and the finalisers it registers run when it returns.
// When it returns, the copy becomes the call again. When it has not
// returned grace after ctx ended (a handler stuck in a system call, which
// no context reaches), the stage returns overrun's outcome instead, and
// the rest runs on alone: done closes when it returns at last.
func Bound(grace time.Duration, overrun func(ctx context.Context, call *Call, done <-chan struct{}) *Outcome) Middleware {
	return func(next Handler) Handler {
		inner := Finalise(next)
		return func(ctx context.Context, call *Call) *Outcome {
			c := *call
			c.finalisers = nil
			result := make(chan *Outcome, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				result <- inner(ctx, &c)
			}()
			join := func(out *Outcome) *Outcome {
				c.finalisers = call.finalisers
				*call = c
				return out
			}
			select {
			case out := <-result:
				return join(out)
			case <-ctx.Done():
			}
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case out := <-result:
				return join(out)
			case <-t.C:
				return overrun(ctx, call, done)
			}
		}
	}
}
