package tools

import (
	"context"
	"sync"
	"time"
)

// A Bounder answers, for a Bound stage, the calls whose pipeline has not
// returned grace after their context ended.
type Bounder interface {
	// Answerer returns the function that answers the call of ctx with an
	// outcome without waiting for its pipeline, or nil when the call
	// cannot be answered so: it is then not bounded.
	Answerer(ctx context.Context) func(*Call, *Outcome)
	// Overrun returns the outcome such a call is answered with.
	Overrun(ctx context.Context, call *Call) *Outcome
	// Returned is called when the pipeline of a call answered without it
	// returns at last, with the outcome it returned, which reaches no
	// client.
	Returned(call *Call, out *Outcome)
}

// Bound returns a stage that has every call answered at most grace after
// its context ends, whatever the rest of the pipeline does, and runs the
// rest on the caller's goroutine: it costs a call that returns in time the
// registration of a function with its context, nothing more.
//
// When the context ends, a timer is set. If the rest has not returned
// when it fires (a handler stuck in a system call, which no context
// reaches), the call is marked overran (Call.Overran), its overrun hooks
// run (Call.OnOverrun) with b's Overrun outcome, and b's Answerer answers
// the client with it, from the timer's goroutine. The rest runs on alone,
// and its outcome, when it returns at last, goes up the pipeline as any
// other: b.Returned is told, and the stages outside see Overran.
func Bound(grace time.Duration, b Bounder) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) *Outcome {
			answer := b.Answerer(ctx)
			if answer == nil {
				return next(ctx, call)
			}
			var (
				mu    sync.Mutex
				timer *time.Timer
			)
			stop := context.AfterFunc(ctx, func() {
				mu.Lock()
				defer mu.Unlock()
				timer = time.AfterFunc(grace, func() {
					out := b.Overrun(ctx, call)
					if call.overrun(out) {
						answer(call, out)
					}
				})
			})
			out := next(ctx, call)
			if !stop() {
				mu.Lock()
				if timer != nil {
					timer.Stop()
				}
				mu.Unlock()
			}
			if !call.settle() {
				b.Returned(call, out)
			}
			return out
		}
	}
}

// The states of a call's answer (Call.state).
const (
	running int32 = iota // not answered yet
	settled              // its pipeline returned before it was answered
	overran              // answered at its deadline, its handler still running
)

// OnOverrun registers fn to run, once, if the call is answered while its
// handler still runs, past its deadline (see Bound), with the outcome the
// client is answered with, before it is answered. A stage that records
// every call a client was answered (an audit) registers it: Overran then
// tells it, once the pipeline returns at last, that the record is made.
// Only stages outside the bound may register one.
func (c *Call) OnOverrun(fn func(*Outcome)) {
	c.overrunMu.Lock()
	defer c.overrunMu.Unlock()
	c.overrunHooks = append(c.overrunHooks, fn)
}

// Overran reports whether the call was answered while its handler still
// ran, past its deadline: the outcome its pipeline returns reaches no
// client.
func (c *Call) Overran() bool { return c.state.Load() == overran }

// overrun marks the call overran, unless its pipeline returned first, and
// then runs its overrun hooks with out, last registered first; it reports
// whether it did.
func (c *Call) overrun(out *Outcome) bool {
	if !c.state.CompareAndSwap(running, overran) {
		return false
	}
	c.overrunMu.Lock()
	hooks := c.overrunHooks
	c.overrunMu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		runFinaliser(c, hooks[i], out)
	}
	return true
}

// settle marks the call answered by its pipeline, and reports false if it
// was answered without it already.
func (c *Call) settle() bool {
	return c.state.CompareAndSwap(running, settled) || c.state.Load() == settled
}
