package hooks

import (
	"context"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
)

func TestConcurrencyPerTool(t *testing.T) {
	h := newHarness(t, Config{Tools: map[string]ToolConfig{"p_block": {Concurrency: &ConcurrencyConfig{MaxInFlight: 1}}}})
	ctx := context.Background()
	var wg sync.WaitGroup
	var first mcptest.Result
	wg.Go(func() { first = h.client("a").Call(ctx, "p_block", map[string]any{}, nil) })
	<-h.probe.started
	// A second call of the tool, in another session, waits until its
	// deadline.
	cs := h.client("b")
	r := cs.Call(ctx, "p_block", map[string]any{}, map[string]any{"io.github.wink-mcp/timeoutMs": 30})
	if want := "Tool 'p_block' could not start before its deadline (30ms): 1 calls of it already in flight."; !r.IsError || r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
	if ev := h.last(cs); ev.ErrorClass != "busy" || ev.Retries != 0 {
		t.Errorf("recorded %+v", ev)
	}
	// Other tools are not limited.
	if r := cs.Call(ctx, "p_read", map[string]any{}, nil); r.IsError {
		t.Error(r.Text())
	}
	close(h.probe.release)
	wg.Wait()
	if first.IsError {
		t.Errorf("first call: %s", first.Text())
	}
	// The slot is free again.
	if r := cs.Call(ctx, "p_block", map[string]any{}, nil); r.IsError {
		t.Error(r.Text())
	}
}

func TestConcurrencyServerWide(t *testing.T) {
	h := newHarness(t, Config{Concurrency: ConcurrencyConfig{MaxInFlight: 2}})
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() { h.client(id).Call(ctx, "p_block", map[string]any{}, nil) })
	}
	<-h.probe.started
	<-h.probe.started
	r := h.client("c").Call(ctx, "p_read", map[string]any{}, map[string]any{"io.github.wink-mcp/timeoutMs": 20})
	if want := "Tool 'p_read' could not start before its deadline (20ms): 2 calls already in flight."; r.Text() != want {
		t.Errorf("got %q, want %q", r.Text(), want)
	}
	// A waiting call gets the slot a finished one releases.
	done := make(chan mcptest.Result)
	go func() { done <- h.client("d").Call(ctx, "p_read", map[string]any{}, nil) }()
	h.probe.release <- struct{}{}
	if r := <-done; r.IsError {
		t.Errorf("waiting call: %s", r.Text())
	}
	close(h.probe.release)
	wg.Wait()
}
