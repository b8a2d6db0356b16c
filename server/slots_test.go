package server_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
)

// trace records, for each stage a call enters, its name and what the call
// holds at that point.
type trace struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trace) stage(name string, probe func(*tools.Call) string) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			s := name
			if probe != nil {
				s += ":" + probe(call)
			}
			tr.mu.Lock()
			tr.steps = append(tr.steps, s)
			tr.mu.Unlock()
			return next(ctx, call)
		}
	}
}

func newSlotHarness(t *testing.T, opts server.Options) *harness {
	t.Helper()
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	opts.Name, opts.Version, opts.Tree = "test", "1", tree
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv}
}

// TestSlotOrder puts a stage in every slot and checks the order calls pass
// them, and where the server's own stages sit between them: the arguments
// are decoded after input, the transaction begins after retry.
func TestSlotOrder(t *testing.T) {
	tr := &trace{}
	decoded := func(c *tools.Call) string {
		if c.Params != nil {
			return "decoded"
		}
		return "raw"
	}
	inTx := func(c *tools.Call) string {
		if c.Tx != nil {
			return "tx"
		}
		return "no-tx"
	}
	stages := map[tools.Slot][]tools.Middleware{}
	for s := tools.SlotMetrics; s <= tools.SlotExecute; s++ {
		probe := decoded
		if s == tools.SlotRetry || s == tools.SlotExecute {
			probe = inTx
		}
		stages[s] = []tools.Middleware{tr.stage(s.String(), probe), tr.stage(s.String()+"2", nil)}
	}
	h := newSlotHarness(t, server.Options{Stages: stages, Middleware: []tools.Middleware{tr.stage("middleware", decoded)}})
	if r := h.client("s").Call(context.Background(), "probe_get", map[string]any{}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	want := []string{
		"metrics:raw", "metrics2", "audit:raw", "audit2", "output:raw", "output2",
		"authorise:raw", "authorise2", "rate_limit:raw", "rate_limit2", "concurrency:raw", "concurrency2",
		"cache:raw", "cache2", "input:raw", "input2", "middleware:raw",
		"retry:no-tx", "retry2", "execute:tx", "execute2",
	}
	if !slices.Equal(tr.steps, want) {
		t.Errorf("stages ran\n %v\nwant\n %v", tr.steps, want)
	}
}

func TestUnknownSlot(t *testing.T) {
	tree, _ := sections.NewTree(probeSection())
	_, err := server.New(server.Options{Tree: tree, Stages: map[tools.Slot][]tools.Middleware{tools.SlotExecute + 1: nil}})
	if err == nil || err.Error() != `server: unknown pipeline slot Slot(10)` {
		t.Errorf("got %v", err)
	}
}

// TestStageControlSignals: a stage responds (short-circuits with a result),
// aborts (an error result) or asks for a retry after a delay (the delay in
// _meta); each is recorded like any call.
func TestStageControlSignals(t *testing.T) {
	signal := func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			switch string(call.Args) {
			case `{"by":1}`:
				return &tools.Outcome{Message: "From the stage.", Success: true, Cached: true}
			case `{"by":2}`:
				return tools.Failure("custom", "Not now.")
			case `{"by":3}`:
				return tools.RetryAfter("custom", "Later.", 1500*time.Millisecond+1)
			}
			return next(ctx, call)
		}
	}
	h := newSlotHarness(t, server.Options{Stages: map[tools.Slot][]tools.Middleware{tools.SlotCache: {signal}}})
	cs := h.client("s")
	ctx := context.Background()
	r := cs.Call(ctx, "probe_add", map[string]any{"by": 1}, nil)
	if r.IsError || r.Text() != "From the stage.\n\nSession: "+h.session(cs).ID() || h.count(cs) != 0 {
		t.Errorf("respond: %+v", r)
	}
	if ev := h.last(cs); !ev.Cached || !ev.Success || ev.Retries != 0 {
		t.Errorf("respond recorded %+v", ev)
	}
	r = cs.Call(ctx, "probe_add", map[string]any{"by": 2}, nil)
	if !r.IsError || r.Text() != "Not now." || h.last(cs).ErrorClass != "custom" {
		t.Errorf("abort: %+v", r)
	}
	if r = cs.Call(ctx, "probe_add", map[string]any{"by": 3}, nil); r.Meta["io.github.wink-mcp/retryAfterMs"] != float64(1501) {
		t.Errorf("retry after: %+v", r)
	}
}

func TestToolFilterHidesFromList(t *testing.T) {
	type key struct{}
	h := newSlotHarness(t, server.Options{ToolFilter: func(ctx context.Context, tl *tools.Tool, _ string) bool {
		return ctx.Value(key{}) != nil || tl.Name() != "probe_add"
	}})
	cs := h.client("s")
	if got := cs.ToolNames(context.Background()); slices.Contains(got, "probe_add") || len(got) != len(h.srv.Tools())-1 || got[0] != "probe_get" {
		t.Errorf("listed %v", got)
	}
	if got := cs.ToolNames(context.WithValue(context.Background(), key{}, 1)); !slices.Contains(got, "probe_add") {
		t.Errorf("listed %v", got)
	}
	// The filter refuses no call: that is a stage's job, with a result.
	if r := cs.Call(context.Background(), "probe_add", map[string]any{"by": 1}, nil); r.IsError {
		t.Errorf("a hidden tool's call: %+v", r)
	}
}
