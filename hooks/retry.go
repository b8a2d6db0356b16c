package hooks

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// RetryConfig configures retries of idempotent tools on transient errors
// (see tools.Transient).
type RetryConfig struct {
	Enabled bool `json:"enabled" jsonschema:"Whether every idempotent tool is retried."`
	// MaxAttempts is 3 when 0.
	MaxAttempts int `json:"max_attempts" jsonschema:"Attempts in all, the first included." schema:"minimum=1,maximum=100"`
	// BaseDelay and MaxDelay are 100ms and 2s when 0.
	BaseDelay time.Duration `json:"base_delay" jsonschema:"The wait before the second attempt; each further wait doubles, with jitter."`
	MaxDelay  time.Duration `json:"max_delay" jsonschema:"The longest wait between attempts."`
}

// ToolRetryConfig overrides the retry settings for one tool.
type ToolRetryConfig struct {
	Enabled     *bool          `json:"enabled" jsonschema:"Whether this tool is retried."`
	MaxAttempts *int           `json:"max_attempts" jsonschema:"Attempts in all, the first included." schema:"minimum=1,maximum=100"`
	BaseDelay   *time.Duration `json:"base_delay" jsonschema:"The wait before the second attempt."`
	MaxDelay    *time.Duration `json:"max_delay" jsonschema:"The longest wait between attempts."`
}

// Retry returns the retry stage. It sits inside the session lock, between
// the policies and the transaction, so each attempt runs in its own
// transaction: a failed attempt is restored before the next begins. Only a
// tool annotated idempotent whose retries are on is retried, and only when
// the handler's error was marked with tools.Transient. The waits grow
// exponentially from BaseDelay up to MaxDelay, each with jitter (between
// half and all of it); a wait that would end past the call's deadline is
// not taken, and the call fails with the last error. Nil when no tool's
// retries are on.
func (h *Hooks) Retry() tools.Middleware {
	if !h.retry {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			p := h.plan(call.Tool)
			if !p.retryable {
				return next(ctx, call)
			}
			for attempt := 1; ; attempt++ {
				out := next(ctx, call)
				out.Retries = attempt - 1
				if out.Success || attempt >= p.retry.MaxAttempts || !tools.IsTransient(out.Err) || ctx.Err() != nil {
					return out
				}
				wait := backoff(p.retry, attempt)
				if !call.Deadline.IsZero() && wait >= time.Until(call.Deadline) {
					call.Logger.Info("not retrying: the next attempt would start past the deadline", "attempt", attempt, "err", out.Err)
					return out
				}
				call.Logger.Info("retrying after a transient error", "attempt", attempt, "wait", wait, "err", out.Err)
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return out
				}
			}
		}
	}
}

// backoff returns the wait after the given attempt: BaseDelay doubled for
// each attempt before it, at most MaxDelay, then jittered to between half
// and all of that.
func backoff(r RetryConfig, attempt int) time.Duration {
	d := r.BaseDelay
	for i := 1; i < attempt && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
