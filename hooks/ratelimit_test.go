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
	cs := newClientSession("s1")
	ctx := context.Background()
	for i := range 2 {
		if r := h.call(ctx, cs, "p_read", map[string]any{}); r.IsError {
			t.Fatalf("call %d refused: %s", i+1, r.text())
		}
	}
	r := h.call(ctx, cs, "p_read2", map[string]any{})
	if want := "Rate limit exceeded for 'p_read2'; retry after 1.0s."; !r.IsError || r.text() != want {
		t.Fatalf("got %q, want %q", r.text(), want)
	}
	if got := r.Meta["io.wink-mcp/retryAfterMs"]; got != float64(1000) {
		t.Errorf("_meta retryAfterMs = %v, want 1000 (meta %v)", got, r.Meta)
	}
	if ev := h.last(cs); ev.ErrorClass != "rate_limited" || ev.Retries != 0 {
		t.Errorf("recorded %+v", ev)
	}
	// Another session has its own bucket.
	if r := h.call(ctx, newClientSession("s2"), "p_read", map[string]any{}); r.IsError {
		t.Errorf("another session refused: %s", r.text())
	}
	// A refused call took no token: after 1.5s one is back, and a half.
	clk.Advance(1500 * time.Millisecond)
	if r := h.call(ctx, cs, "p_read", map[string]any{}); r.IsError {
		t.Fatalf("refused after the wait: %s", r.text())
	}
	r = h.call(ctx, cs, "p_read", map[string]any{})
	if want := "Rate limit exceeded for 'p_read'; retry after 0.5s."; r.text() != want {
		t.Errorf("got %q, want %q", r.text(), want)
	}
}

func TestRateLimitPerTool(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, Tools: map[string]ToolConfig{
		"p_read": {RateLimit: &ToolRateLimitConfig{Rate: 0.5}},
	}})
	cs := newClientSession("s1")
	ctx := context.Background()
	if r := h.call(ctx, cs, "p_read", map[string]any{}); r.IsError {
		t.Fatal(r.text())
	}
	if r := h.call(ctx, cs, "p_read", map[string]any{}); r.text() != "Rate limit exceeded for 'p_read'; retry after 2.0s." {
		t.Errorf("got %q", r.text())
	}
	for range 5 { // other tools are not limited
		if r := h.call(ctx, cs, "p_read2", map[string]any{}); r.IsError {
			t.Fatal(r.text())
		}
	}
}

// TestRateLimitWaits: a call may wait for its token, up to MaxWait.
func TestRateLimitWaits(t *testing.T) {
	h := newHarness(t, Config{RateLimit: RateLimitConfig{Rate: 1000, Burst: 1, MaxWait: time.Minute}})
	cs := newClientSession("s1")
	for i := range 5 {
		if r := h.call(context.Background(), cs, "p_read", map[string]any{}); r.IsError {
			t.Fatalf("call %d: %s", i, r.text())
		}
	}
}

// TestRateLimitWaitRespectsDeadline: a wait that would end past the call's
// deadline is not taken; the call is refused with a retry-after.
func TestRateLimitWaitRespectsDeadline(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, RateLimit: RateLimitConfig{Rate: 0.01, Burst: 1, MaxWait: time.Hour}})
	cs := newClientSession("s1")
	h.call(context.Background(), cs, "p_read", map[string]any{})
	r := h.call(context.Background(), cs, "p_read", map[string]any{}, map[string]any{"io.wink-mcp/timeoutMs": 1000})
	if want := "Rate limit exceeded for 'p_read'; retry after 100.0s."; r.text() != want {
		t.Errorf("got %q, want %q", r.text(), want)
	}
}

func TestQuotaCountsSuccessfulCalls(t *testing.T) {
	h := newHarness(t, Config{RateLimit: RateLimitConfig{Quota: 3}, Tools: map[string]ToolConfig{
		"p_write": {RateLimit: &ToolRateLimitConfig{Quota: 1}},
	}})
	cs := newClientSession("s1")
	ctx := context.Background()
	// Failures give their unit back.
	for range 3 {
		if r := h.call(ctx, cs, "p_write", map[string]any{"by": -1}); r.text() != "Negative." {
			t.Fatalf("got %q", r.text())
		}
		if r := h.call(ctx, cs, "p_write", map[string]any{"by": "x"}); !r.IsError {
			t.Fatal("invalid arguments accepted")
		}
	}
	if r := h.call(ctx, cs, "p_write", map[string]any{"by": 1}); r.IsError {
		t.Fatal(r.text())
	}
	want := "Call quota for 'p_write' exhausted: this session may make 1 successful calls of it."
	if r := h.call(ctx, cs, "p_write", map[string]any{"by": 1}); r.text() != want {
		t.Errorf("got %q, want %q", r.text(), want)
	}
	for range 2 {
		if r := h.call(ctx, cs, "p_read", map[string]any{}); r.IsError {
			t.Fatal(r.text())
		}
	}
	want = "Call quota exhausted: this session may make 3 successful calls."
	if r := h.call(ctx, cs, "p_read", map[string]any{}); r.text() != want || r.Meta != nil {
		t.Errorf("got %q (meta %v), want %q without a retry-after", r.text(), r.Meta, want)
	}
	lim, _ := session.Resource(h.session(cs), limitsKey)
	if lim.quota.used != 3 || lim.quota.pending != 0 {
		t.Errorf("quota %+v, want 3 used, none pending", lim.quota)
	}
	// Another session has a quota of its own.
	if r := h.call(ctx, newClientSession("s2"), "p_read", map[string]any{}); r.IsError {
		t.Error(r.text())
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
