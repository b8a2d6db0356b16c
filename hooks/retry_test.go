package hooks

import (
	"context"
	"testing"
	"time"
)

func retryConfig() Config {
	return Config{Retry: RetryConfig{Enabled: true, MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}}
}

// TestRetryTransient: p_flaky adds one to the count on every attempt and
// fails transiently twice; each attempt runs in its own transaction, so
// the two failed attempts are restored and the count is 1.
func TestRetryTransient(t *testing.T) {
	h := newHarness(t, retryConfig())
	h.probe.failFirst.Store(2)
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_flaky", map[string]any{}, nil)
	if r.IsError {
		t.Fatalf("failed: %s", r.Text())
	}
	if got := h.probe.flaky.Load(); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
	if n := h.count(cs); n != 1 {
		t.Errorf("count = %d, want 1 (failed attempts restored)", n)
	}
	if ev := h.last(cs); ev.Retries != 2 || !ev.Success {
		t.Errorf("recorded %+v, want 2 retries", ev)
	}
}

func TestRetryGivesUp(t *testing.T) {
	h := newHarness(t, retryConfig())
	h.probe.failFirst.Store(100)
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_flaky", map[string]any{}, nil)
	if want := "Tool 'p_flaky' failed: upstream timed out"; !r.IsError || r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
	if got := h.probe.flaky.Load(); got != 4 {
		t.Errorf("%d attempts, want 4", got)
	}
	if n := h.count(cs); n != 0 {
		t.Errorf("count = %d, want 0", n)
	}
	if ev := h.last(cs); ev.Retries != 3 || ev.Success {
		t.Errorf("recorded %+v, want 3 retries", ev)
	}
}

// TestRetryThenCached: a result that took a retry is cached; the call
// answered from the cache ran nothing and is recorded without retries.
func TestRetryThenCached(t *testing.T) {
	cfg := retryConfig()
	cfg.Cache = CacheConfig{Enabled: true}
	h := newHarness(t, cfg)
	h.probe.failFirst.Store(1)
	cs := h.client("s1")
	for i, want := range []struct {
		cached  bool
		retries int
	}{{false, 1}, {true, 0}} {
		if r := cs.Call(context.Background(), "p_lookup", map[string]any{}, nil); r.IsError {
			t.Fatalf("call %d failed: %s", i+1, r.Text())
		}
		if ev := h.last(cs); ev.Cached != want.cached || ev.Retries != want.retries {
			t.Errorf("call %d recorded cached %v, %d retries; want %v, %d", i+1, ev.Cached, ev.Retries, want.cached, want.retries)
		}
	}
	if got := h.probe.flaky.Load(); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
}

func TestRetryOnlyTransientAndIdempotent(t *testing.T) {
	h := newHarness(t, retryConfig())
	cs := h.client("s1")
	cs.Call(context.Background(), "p_broken", map[string]any{}, nil)
	if got := h.probe.flaky.Swap(0); got != 1 {
		t.Errorf("a permanent error was tried %d times", got)
	}
	cs.Call(context.Background(), "p_once", map[string]any{}, nil)
	if got := h.probe.flaky.Load(); got != 1 {
		t.Errorf("a tool that is not idempotent was tried %d times", got)
	}
	_, err := New(Config{Tools: map[string]ToolConfig{"p_once": {Retry: &ToolRetryConfig{Enabled: ptr(true)}}}}, h.srv.Tools())
	want := `tools.p_once.retry.enabled: tool "p_once" is not annotated idempotent, so it may not be retried`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestRetryWithinDeadline: a wait that would end past the deadline is not
// taken.
func TestRetryWithinDeadline(t *testing.T) {
	h := newHarness(t, Config{Retry: RetryConfig{Enabled: true, MaxAttempts: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}})
	h.probe.failFirst.Store(100)
	r := h.client("s1").Call(context.Background(), "p_flaky", map[string]any{}, nil)
	if !r.IsError || h.probe.flaky.Load() != 1 {
		t.Errorf("%d attempts (%q), want 1", h.probe.flaky.Load(), r.Text())
	}
}

func TestRetryPerTool(t *testing.T) {
	h := newHarness(t, Config{Tools: map[string]ToolConfig{
		"p_flaky": {Retry: &ToolRetryConfig{Enabled: ptr(true), MaxAttempts: ptr(2), BaseDelay: ptr(time.Millisecond), MaxDelay: ptr(time.Millisecond)}},
	}})
	h.probe.failFirst.Store(100)
	h.client("s1").Call(context.Background(), "p_flaky", map[string]any{}, nil)
	if got := h.probe.flaky.Load(); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
}

func TestBackoff(t *testing.T) {
	r := RetryConfig{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for range 50 {
			if got := backoff(r, attempt); got < want/2 || got > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, got, want/2, want)
			}
		}
	}
}
