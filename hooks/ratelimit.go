package hooks

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// RateLimitConfig limits how fast and how much each session calls.
type RateLimitConfig struct {
	Rate    float64       `json:"rate" jsonschema:"Sustained calls per second of each session, shared by its tools (a token bucket per session); 0 means no limit." schema:"minimum=0"`
	Burst   int           `json:"burst" jsonschema:"How many calls may come at once; 0 means the rate rounded up, at least 1." schema:"minimum=0"`
	Quota   int64         `json:"quota" jsonschema:"Successful calls a session may make; 0 means no quota. A call that fails, for any reason, gives its unit back." schema:"minimum=0"`
	MaxWait time.Duration `json:"max_wait" jsonschema:"How long a call may wait for a token, never past its deadline, before it is refused with a retry-after; 0s refuses at once."`
}

// ToolRateLimitConfig limits one tool, per session, on top of the
// server-wide limits.
type ToolRateLimitConfig struct {
	Rate  float64 `json:"rate" jsonschema:"Sustained calls per second of this tool in each session; 0 means no limit." schema:"minimum=0"`
	Burst int     `json:"burst" jsonschema:"How many calls may come at once; 0 means the rate rounded up, at least 1." schema:"minimum=0"`
	Quota int64   `json:"quota" jsonschema:"Successful calls of this tool a session may make; 0 means no quota. A failed call gives its unit back." schema:"minimum=0"`
}

// RateLimit returns the rate limit stage. Each session has a token bucket
// (golang.org/x/time/rate) shared by its calls, and one per tool that has
// its own rate; a call takes a token from each. When one is empty the call
// waits for it, up to MaxWait and never past its deadline, or is refused
// with
//
//	Rate limit exceeded for 'x'; retry after 1.2s.
//
// the delay also in the result's _meta (tools.MetaRetryAfterMs). Quotas
// count the successful calls of a session, and of a tool in a session: a
// unit is reserved when the call starts and, when the call is over (a
// finaliser), kept if it succeeded or given back otherwise, panics included.
// Nil when no rate or quota is set.
func (h *Hooks) RateLimit() tools.Middleware {
	if !h.rateLimit {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			p := h.plan(call.Tool)
			if p.rate.Rate <= 0 && p.rate.Quota <= 0 && p.toolRate.Rate <= 0 && p.toolRate.Quota <= 0 {
				return next(ctx, call)
			}
			lim := session.Attach(call.Session, limitsKey, newLimits)
			if out := lim.reserveQuota(call, p); out != nil {
				return out
			}
			if out := lim.take(ctx, call, p, h.now()); out != nil {
				return out
			}
			return next(ctx, call)
		}
	}
}

var limitsKey = session.NewResourceKey[*limits]("hooks.rate_limit")

// limits are one session's buckets and quota counts.
type limits struct {
	mu     sync.Mutex
	bucket *rate.Limiter
	tools  map[string]*toolLimits
	quota  quota
}

type toolLimits struct {
	bucket *rate.Limiter
	quota  quota
}

// quota counts units kept (used) and reserved by calls in flight (pending).
type quota struct{ used, pending int64 }

func newLimits() *limits { return &limits{tools: map[string]*toolLimits{}} }

func (l *limits) tool(name string) *toolLimits {
	t := l.tools[name]
	if t == nil {
		t = &toolLimits{}
		l.tools[name] = t
	}
	return t
}

// reserveQuota reserves a unit of the session's quota and of the tool's,
// and registers their settlement; it returns the refusal when one is spent.
func (l *limits) reserveQuota(call *tools.Call, p *plan) *tools.Outcome {
	serverQ, toolQ := p.rate.Quota, p.toolRate.Quota
	if serverQ <= 0 && toolQ <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tl := l.tool(call.Tool.Name())
	if serverQ > 0 && l.quota.used+l.quota.pending >= serverQ {
		return tools.Failure(tools.ClassRateLimited, fmt.Sprintf("Call quota exhausted: this session may make %d successful calls.", serverQ))
	}
	if toolQ > 0 && tl.quota.used+tl.quota.pending >= toolQ {
		return tools.Failure(tools.ClassRateLimited, fmt.Sprintf("Call quota for '%s' exhausted: this session may make %d successful calls of it.", call.Tool.Name(), toolQ))
	}
	if serverQ > 0 {
		l.quota.pending++
	}
	if toolQ > 0 {
		tl.quota.pending++
	}
	call.Finally(func(out *tools.Outcome) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if serverQ > 0 {
			l.quota.settle(out)
		}
		if toolQ > 0 {
			tl.quota.settle(out)
		}
	})
	return nil
}

// settle settles a unit a call reserved: kept if the call succeeded, given
// back otherwise.
func (q *quota) settle(out *tools.Outcome) {
	q.pending--
	if out.Success {
		q.used++
	}
}

// take takes a token from the session's bucket and the tool's, waiting for
// them when allowed; it returns the refusal otherwise.
func (l *limits) take(ctx context.Context, call *tools.Call, p *plan, now time.Time) *tools.Outcome {
	if p.rate.Rate <= 0 && p.toolRate.Rate <= 0 {
		return nil
	}
	l.mu.Lock()
	var rs []*rate.Reservation
	if p.rate.Rate > 0 {
		if l.bucket == nil {
			l.bucket = rate.NewLimiter(rate.Limit(p.rate.Rate), burst(p.rate.Rate, p.rate.Burst))
		}
		rs = append(rs, l.bucket.ReserveN(now, 1))
	}
	if p.toolRate.Rate > 0 {
		tl := l.tool(call.Tool.Name())
		if tl.bucket == nil {
			tl.bucket = rate.NewLimiter(rate.Limit(p.toolRate.Rate), burst(p.toolRate.Rate, p.toolRate.Burst))
		}
		rs = append(rs, tl.bucket.ReserveN(now, 1))
	}
	l.mu.Unlock()
	var delay time.Duration
	for _, r := range rs {
		delay = max(delay, r.DelayFrom(now))
	}
	if delay == 0 {
		return nil
	}
	// The deadline is a wall-clock time (it bounds contexts); the buckets
	// run on the configured clock.
	if delay <= p.rate.MaxWait && (call.Deadline.IsZero() || delay < time.Until(call.Deadline)) {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			for _, r := range rs {
				r.CancelAt(now)
			}
			return tools.Failure(tools.ClassCancelled, fmt.Sprintf("Tool '%s' was cancelled.", call.Tool.Name()))
		}
	}
	for _, r := range rs {
		r.CancelAt(now)
	}
	return tools.RetryAfter(tools.ClassRateLimited,
		fmt.Sprintf("Rate limit exceeded for '%s'; retry after %s.", call.Tool.Name(), seconds(delay)), delay)
}

// burst returns the bucket size for r calls a second: b, or r rounded up
// and at least 1.
func burst(r float64, b int) int {
	if b > 0 {
		return b
	}
	return max(1, int(math.Ceil(r)))
}

// seconds renders d in seconds with one decimal, rounded up: "1.2s".
func seconds(d time.Duration) string {
	tenths := (d + 100*time.Millisecond - 1) / (100 * time.Millisecond)
	return fmt.Sprintf("%d.%ds", tenths/10, tenths%10)
}
