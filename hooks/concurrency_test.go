package hooks

import (
	"context"
	"sync"
	"testing"
)

func TestConcurrencyPerTool(t *testing.T) {
	h := newHarness(t, Config{Tools: map[string]ToolConfig{"p_block": {Concurrency: &ConcurrencyConfig{MaxInFlight: 1}}}})
	ctx := context.Background()
	var wg sync.WaitGroup
	var first result
	wg.Go(func() { first = h.call(ctx, newClientSession("a"), "p_block", map[string]any{}) })
	<-h.probe.started
	// A second call of the tool, in another session, waits until its
	// deadline.
	cs := newClientSession("b")
	r := h.call(ctx, cs, "p_block", map[string]any{}, map[string]any{"io.wink-mcp/timeoutMs": 30})
	if want := "Tool 'p_block' could not start before its deadline (30ms): 1 calls of it already in flight."; !r.IsError || r.text() != want {
		t.Errorf("got %q, want %q", r.text(), want)
	}
	if ev := h.last(cs); ev.ErrorClass != "busy" || ev.Retries != 0 {
		t.Errorf("recorded %+v", ev)
	}
	// Other tools are not limited.
	if r := h.call(ctx, cs, "p_read", map[string]any{}); r.IsError {
		t.Error(r.text())
	}
	close(h.probe.release)
	wg.Wait()
	if first.IsError {
		t.Errorf("first call: %s", first.text())
	}
	// The slot is free again.
	if r := h.call(ctx, cs, "p_block", map[string]any{}); r.IsError {
		t.Error(r.text())
	}
}

func TestConcurrencyServerWide(t *testing.T) {
	h := newHarness(t, Config{Concurrency: ConcurrencyConfig{MaxInFlight: 2}})
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() { h.call(ctx, newClientSession(id), "p_block", map[string]any{}) })
	}
	<-h.probe.started
	<-h.probe.started
	r := h.call(ctx, newClientSession("c"), "p_read", map[string]any{}, map[string]any{"io.wink-mcp/timeoutMs": 20})
	if want := "Tool 'p_read' could not start before its deadline (20ms): 2 calls already in flight."; r.text() != want {
		t.Errorf("got %q, want %q", r.text(), want)
	}
	// A waiting call gets the slot a finished one releases.
	done := make(chan result)
	go func() { done <- h.call(ctx, newClientSession("d"), "p_read", map[string]any{}) }()
	h.probe.release <- struct{}{}
	if r := <-done; r.IsError {
		t.Errorf("waiting call: %s", r.text())
	}
	close(h.probe.release)
	wg.Wait()
}
