package hooks

import (
	"context"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

func TestRateLimitRefusesWithRetryAfter(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, RateLimit: RateLimitConfig{Rate: 1, Burst: 2}})
	cs := h.client("s1")
	ctx := context.Background()
	for i := range 2 {
		if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
			t.Fatalf("call %d refused: %s", i+1, r.Text())
		}
	}
	r := cs.Call(ctx, "p_read2", map[string]any{}, nil)
	if want := "Rate limit exceeded for 'p_read2'; retry after 1.0s."; !r.IsError || r.Text() != want {
		t.Fatalf("got %q, want %q", r.Text(), want)
	}
	if got := r.Meta["io.github.wink-mcp/retryAfterMs"]; got != float64(1000) {
		t.Errorf("_meta retryAfterMs = %v, want 1000 (meta %v)", got, r.Meta)
	}
	if ev := h.last(cs); ev.ErrorClass != "rate_limited" || ev.Retries != 0 {
		t.Errorf("recorded %+v", ev)
	}
	// Another session has its own bucket.
	if r := h.client("s2").Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
		t.Errorf("another session refused: %s", r.Text())
	}
	// A refused call took no token: after 1.5s one is back, and a half.
	clk.Advance(1500 * time.Millisecond)
	if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
		t.Fatalf("refused after the wait: %s", r.Text())
	}
	r = cs.Call(ctx, "p_read", map[string]any{}, nil)
	if want := "Rate limit exceeded for 'p_read'; retry after 0.5s."; r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
}

func TestRateLimitPerTool(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, Tools: map[string]ToolConfig{
		"p_read": {RateLimit: &ToolRateLimitConfig{Rate: 0.5}},
	}})
	cs := h.client("s1")
	ctx := context.Background()
	if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.Text() != "Rate limit exceeded for 'p_read'; retry after 2.0s." {
		t.Errorf("got %q", r.Text())
	}
	for range 5 { // other tools are not limited
		if r := cs.Call(ctx, "p_read2", map[string]any{}, nil); r.IsError {
			t.Fatal(r.Text())
		}
	}
}

// TestRateLimitWaits: a call may wait for its token, up to MaxWait.
func TestRateLimitWaits(t *testing.T) {
	h := newHarness(t, Config{RateLimit: RateLimitConfig{Rate: 1000, Burst: 1, MaxWait: time.Minute}})
	cs := h.client("s1")
	for i := range 5 {
		if r := cs.Call(context.Background(), "p_read", map[string]any{}, nil); r.IsError {
			t.Fatalf("call %d: %s", i, r.Text())
		}
	}
}

// TestRateLimitWaitRespectsDeadline: a wait that would end past the call's
// deadline is not taken; the call is refused with a retry-after.
func TestRateLimitWaitRespectsDeadline(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, RateLimit: RateLimitConfig{Rate: 0.01, Burst: 1, MaxWait: time.Hour}})
	cs := h.client("s1")
	cs.Call(context.Background(), "p_read", map[string]any{}, nil)
	r := cs.Call(context.Background(), "p_read", map[string]any{}, map[string]any{"io.github.wink-mcp/timeoutMs": 1000})
	if want := "Rate limit exceeded for 'p_read'; retry after 100.0s."; r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
}

func TestQuotaCountsSuccessfulCalls(t *testing.T) {
	h := newHarness(t, Config{RateLimit: RateLimitConfig{Quota: 3}, Tools: map[string]ToolConfig{
		"p_write": {RateLimit: &ToolRateLimitConfig{Quota: 1}},
	}})
	cs := h.client("s1")
	ctx := context.Background()
	// Failures give their unit back.
	for range 3 {
		if r := cs.Call(ctx, "p_write", map[string]any{"by": -1}, nil); r.Text() != "Negative." {
			t.Fatalf("got %q", r.Text())
		}
		if r := cs.Call(ctx, "p_write", map[string]any{"by": "x"}, nil); !r.IsError {
			t.Fatal("invalid arguments accepted")
		}
	}
	if r := cs.Call(ctx, "p_write", map[string]any{"by": 1}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	want := "Call quota for 'p_write' exhausted: this session may make 1 successful calls of it."
	if r := cs.Call(ctx, "p_write", map[string]any{"by": 1}, nil); r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
	for range 2 {
		if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
			t.Fatal(r.Text())
		}
	}
	want = "Call quota exhausted: this session may make 3 successful calls."
	if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.Text() != want || r.Meta != nil {
		t.Errorf("got %q (meta %v), want %q without a retry-after", r.Text(), r.Meta, want)
	}
	lim, _ := session.Resource(h.session(cs), limitsKey)
	if lim.quota.used != 3 || lim.quota.pending != 0 {
		t.Errorf("quota %+v, want 3 used, none pending", lim.quota)
	}
	// Another session has a quota of its own.
	if r := h.client("s2").Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
		t.Error(r.Text())
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0.0s", time.Millisecond: "0.1s", 100 * time.Millisecond: "0.1s", 101 * time.Millisecond: "0.2s",
		1200 * time.Millisecond: "1.2s", 61 * time.Second: "61.0s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}
