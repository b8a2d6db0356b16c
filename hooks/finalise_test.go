package hooks

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// denyThirteen denies p_write by 13.
type denyThirteen struct{}

func (denyThirteen) Name() string { return "thirteen" }
func (denyThirteen) Check(c *tools.Call) error {
	if p, ok := c.Params.(byParams); ok && p.By == 13 {
		return errors.New("Unlucky.")
	}
	return nil
}
func (denyThirteen) OnResult(*tools.Call, *tools.Outcome) error { return nil }

// panicIf is a stage that panics on the way in when the arguments contain
// the word.
func panicIf(word string) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if strings.Contains(string(call.Args), word) {
				panic("stage " + word)
			}
			return next(ctx, call)
		}
	}
}

// TestNothingLeaks runs calls down every failure path at once, many times,
// with every stage that takes something on: afterwards every semaphore
// slot is free, no quota unit is pending and the quota counts exactly the
// successful calls.
func TestNothingLeaks(t *testing.T) {
	const serverSlots, quota = 4, 1 << 20
	cfg := Defaults()
	cfg.Concurrency.MaxInFlight = serverSlots
	cfg.RateLimit = RateLimitConfig{Rate: 1e6, Burst: 1 << 20, Quota: quota}
	cfg.Authorise = AuthoriseConfig{Deny: []string{"subject:mallory"}}
	cfg.Retry = RetryConfig{Enabled: true, MaxAttempts: 2, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}
	cfg.Cache.Enabled = true
	cfg.Output.Validate = true
	cfg.Tools = map[string]ToolConfig{
		"p_block": {Concurrency: &ConcurrencyConfig{MaxInFlight: 1}, RateLimit: &ToolRateLimitConfig{Quota: quota}},
		"p_write": {Concurrency: &ConcurrencyConfig{MaxInFlight: 2}, RateLimit: &ToolRateLimitConfig{Quota: quota}},
		"p_text":  {RateLimit: &ToolRateLimitConfig{Rate: 1e-6, Burst: 1}},
		"p_read2": {RateLimit: &ToolRateLimitConfig{Quota: 1}},
	}
	h := newHarness(t, cfg, func(o *options) {
		o.policies = append(o.policies, denyThirteen{})
		o.extra = map[tools.Slot][]tools.Middleware{
			tools.SlotMetrics: {panicIf("outer-boom")},
			tools.SlotInput:   {panicIf("inner-boom")},
			tools.SlotExecute: {panicIf("exec-boom")},
		}
	})
	h.probe.failFirst.Store(1 << 30) // p_flaky always fails
	past := map[string]any{"io.github.wink-mcp/deadline": "2000-01-01T00:00:00Z"}
	short := map[string]any{"io.github.wink-mcp/timeoutMs": 5}

	type tc struct {
		tool  string
		args  map[string]any
		meta  map[string]any
		class string // "" for success
	}
	cases := []tc{
		{"p_write", map[string]any{"by": 1}, nil, ""},
		{"p_read", map[string]any{"key": "k"}, nil, ""}, // cached after the first
		{"p_write", map[string]any{"by": "x"}, nil, "validation"},
		{"p_write", map[string]any{"by": 13}, nil, "policy"},
		{"p_write", map[string]any{"by": 1}, past, "deadline"},
		{"p_write", map[string]any{"by": -1}, nil, "failure"},
		{"p_broken", map[string]any{}, nil, "error"},
		{"p_flaky", map[string]any{}, nil, "error"},
		{"p_panic", map[string]any{"by": 1}, nil, "panic"},
		{"p_liar", map[string]any{}, nil, "output"},
		{"p_write", map[string]any{"by": 1, "inner-boom": 1}, nil, "panic"},
		{"p_write", map[string]any{"by": 1, "exec-boom": 1}, nil, "panic"},
		{"p_write", map[string]any{"by": 1, "outer-boom": 1}, nil, "panic"},
		{"p_block", map[string]any{}, short, "deadline|busy"},
		{"p_text", map[string]any{}, nil, "|rate_limited"},
		{"p_read2", map[string]any{}, nil, "|rate_limited"},
		{"p_read", map[string]any{}, nil, "unauthorised"}, // as mallory
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	clients := []*mcptest.Client{h.client("s0"), h.client("s1"), h.client("s2")}
	successes := map[*mcptest.Client]int{}
	for round := range 8 {
		for i, c := range cases {
			wg.Go(func() {
				cs := clients[(round+i)%len(clients)]
				ctx := as("alice")
				if c.class == "unauthorised" {
					ctx = as("mallory")
				}
				r := cs.Call(ctx, c.tool, c.args, c.meta)
				switch {
				case c.class == "" && r.IsError, c.class != "" && !strings.HasPrefix(c.class, "|") && !r.IsError:
					t.Errorf("%s %v: isError=%v %q, want class %q", c.tool, c.args, r.IsError, r.Text(), c.class)
				}
				if !r.IsError {
					mu.Lock()
					successes[cs]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()

	// Every slot is free.
	if !h.hooks.serverSem.TryAcquire(serverSlots) {
		t.Error("server-wide semaphore slots leaked")
	}
	for _, name := range []string{"p_block", "p_write"} {
		p := h.hooks.plans[name]
		if !p.toolSem.TryAcquire(int64(p.toolSemN)) {
			t.Errorf("%s: semaphore slots leaked", name)
		}
	}
	// No quota unit is pending, and the session quota counts the
	// successes.
	for cs, n := range successes {
		id := cs.SessionID()
		lim, ok := session.Resource(h.session(cs), limitsKey)
		if !ok {
			t.Fatalf("%s: no limits", id)
		}
		lim.mu.Lock()
		if lim.quota.pending != 0 || lim.quota.used != int64(n) {
			t.Errorf("%s: quota %+v, want %d used and none pending", id, lim.quota, n)
		}
		for name, tl := range lim.tools {
			if tl.quota.pending != 0 {
				t.Errorf("%s: quota of %s has %d units pending", id, name, tl.quota.pending)
			}
		}
		lim.mu.Unlock()
	}
	// Nothing is in flight.
	for _, name := range []string{"p_write", "p_block", "p_panic"} {
		if v := gauge(t, h.hooks.metrics.inFlight.WithLabelValues(name)); v != 0 {
			t.Errorf("%s: %v calls in flight", name, v)
		}
	}
}

// TestFinalisersRunOnEveryPath checks the classes of the failure paths one
// by one, and that a finaliser registered by an outer stage sees the
// outcome the client gets.
func TestFinalisersRunOnEveryPath(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	fin := Finally(func(call *tools.Call, out *tools.Outcome) {
		mu.Lock()
		seen = append(seen, string(out.Class))
		mu.Unlock()
	})
	var errs []string
	onErr := OnError(func(_ context.Context, _ *tools.Call, out *tools.Outcome) {
		mu.Lock()
		errs = append(errs, string(out.Class))
		mu.Unlock()
	})
	cfg := Config{Output: OutputConfig{Validate: true}}
	h := newHarness(t, cfg, func(o *options) {
		o.policies = append(o.policies, denyThirteen{})
		o.extra = map[tools.Slot][]tools.Middleware{
			tools.SlotAuthorise: {fin, onErr},
			tools.SlotInput:     {panicIf("inner-boom")},
		}
	})
	cs := h.client("s")
	ctx := context.Background()
	for _, c := range []struct {
		tool  string
		args  map[string]any
		meta  map[string]any
		class string
	}{
		{"p_write", map[string]any{"by": 1}, nil, ""},
		{"p_write", map[string]any{"by": "x"}, nil, "validation"},
		{"p_write", map[string]any{"by": 13}, nil, "policy"},
		{"p_write", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/deadline": "2000-01-01T00:00:00Z"}, "deadline"},
		{"p_write", map[string]any{"by": -1}, nil, "failure"},
		{"p_broken", map[string]any{}, nil, "error"},
		{"p_panic", map[string]any{"by": 1}, nil, "panic"},
		{"p_liar", map[string]any{}, nil, "output"},
		{"p_write", map[string]any{"by": 1, "inner-boom": true}, nil, "panic"},
	} {
		mu.Lock()
		seen, errs = nil, nil
		mu.Unlock()
		before := h.count(cs)
		r := cs.Call(ctx, c.tool, c.args, c.meta)
		ev := h.last(cs)
		if ev.ErrorClass != c.class || r.IsError != (c.class != "") {
			t.Errorf("%s %v: recorded class %q (isError %v, %q), want %q", c.tool, c.args, ev.ErrorClass, r.IsError, r.Text(), c.class)
		}
		mu.Lock()
		if len(seen) != 1 || seen[0] != c.class {
			t.Errorf("%s %v: finaliser saw %q, want [%s]", c.tool, c.args, seen, c.class)
		}
		if c.class != "" && (len(errs) != 1 || errs[0] != c.class) {
			t.Errorf("%s %v: OnError saw %q", c.tool, c.args, errs)
		}
		mu.Unlock()
		if c.class != "" && h.count(cs) != before {
			t.Errorf("%s %v: state changed by a failed call", c.tool, c.args)
		}
	}
}

// gauge returns the value of g.
func gauge(t testing.TB, g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
