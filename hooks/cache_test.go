package hooks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestCacheHitsAndInvalidation(t *testing.T) {
	h := newHarness(t, Config{Cache: CacheConfig{Enabled: true}})
	cs := h.client("s1")
	ctx := context.Background()
	read := func(args string) mcptest.Result {
		t.Helper()
		return cs.Call(ctx, "p_read", jsonArgs(t, args), nil)
	}
	first := read(`{"key":"a"}`)
	if first.IsError || first.StructuredContent["runs"] != float64(1) {
		t.Fatalf("first call: %+v", first)
	}
	// The same arguments, written differently: answered from the cache.
	hit := cs.Call(ctx, "p_read", jsonArgs(t, `{ "key" : "a" }`), nil)
	if hit.Text() != first.Text() || h.probe.runs.Load() != 1 {
		t.Fatalf("not a hit: %q after %d runs", hit.Text(), h.probe.runs.Load())
	}
	if ev := h.last(cs); !ev.Cached || !ev.Success || ev.Retries != 0 || ev.Text != first.Text() {
		t.Errorf("a hit recorded %+v, want a cached success", ev)
	}
	// Other arguments miss.
	if r := read(`{"key":"b"}`); r.StructuredContent["runs"] != float64(2) {
		t.Errorf("other arguments: %v", r.StructuredContent)
	}
	// Another session has its own cache.
	if r := h.client("s2").Call(ctx, "p_read", jsonArgs(t, `{"key":"a"}`), nil); r.StructuredContent["runs"] != float64(3) {
		t.Errorf("another session hit: %v", r.StructuredContent)
	}
	// A failed state-changing call invalidates nothing.
	cs.Call(ctx, "p_write", map[string]any{"by": -1}, nil)
	if read(`{"key":"a"}`); h.probe.runs.Load() != 3 {
		t.Errorf("a failed write invalidated the cache")
	}
	// A read-only call invalidates nothing.
	cs.Call(ctx, "p_text", map[string]any{}, nil)
	if read(`{"key":"a"}`); h.probe.runs.Load() != 3 {
		t.Errorf("a read invalidated the cache")
	}
	// A successful state-changing call invalidates the session's cache,
	// and only its.
	cs.Call(ctx, "p_write", map[string]any{"by": 5}, nil)
	r := read(`{"key":"a"}`)
	if h.probe.runs.Load() != 4 || r.StructuredContent["count"] != float64(5) {
		t.Errorf("after a write: %v (%d runs)", r.StructuredContent, h.probe.runs.Load())
	}
	if h.client("s2").Call(ctx, "p_read", jsonArgs(t, `{"key":"a"}`), nil); h.probe.runs.Load() != 4 {
		t.Error("a write in s1 invalidated the cache of s2")
	}
}

// TestCacheOnlyReadOnlyIdempotent: p_big is read-only but not idempotent;
// p_write is neither.
func TestCacheOnlyReadOnlyIdempotent(t *testing.T) {
	h := newHarness(t, Config{Cache: CacheConfig{Enabled: true}})
	for _, tl := range h.srv.Tools() {
		name, ann, p := tl.Name(), tl.Annotations(), h.hooks.plans[tl.Name()]
		if p.cacheable != (ann.ReadOnly && ann.Idempotent) {
			t.Errorf("%s: cacheable = %v with annotations %+v", name, p.cacheable, ann)
		}
	}
	_, err := New(Config{Tools: map[string]ToolConfig{"p_big": {Cache: &ToolCacheConfig{Enabled: ptr(true)}}}}, h.srv.Tools())
	want := `tools.p_big.cache.enabled: tool "p_big" is not annotated read-only and idempotent, so its results may not be cached`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestCachePerTool(t *testing.T) {
	h := newHarness(t, Config{Tools: map[string]ToolConfig{"p_read": {Cache: &ToolCacheConfig{Enabled: ptr(true)}}}})
	cs := h.client("s1")
	for range 3 {
		cs.Call(context.Background(), "p_read", map[string]any{}, nil)
	}
	if n := h.probe.runs.Load(); n != 1 {
		t.Errorf("p_read ran %d times, want 1", n)
	}
	if h.hooks.plans["p_read2"].cacheable {
		t.Error("p_read2 is cached without being configured")
	}
}

func TestCacheTTLAndSize(t *testing.T) {
	clk := newClock()
	h := newHarness(t, Config{Now: clk.Now, Cache: CacheConfig{Enabled: true, TTL: time.Minute, MaxEntries: 2}})
	cs := h.client("s1")
	ctx := context.Background()
	call := func(key string) { cs.Call(ctx, "p_read", map[string]any{"key": key}, nil) }
	call("a")
	clk.Advance(59 * time.Second)
	if call("a"); h.probe.runs.Load() != 1 {
		t.Error("expired early")
	}
	clk.Advance(time.Second)
	if call("a"); h.probe.runs.Load() != 2 {
		t.Error("served after its TTL")
	}
	call("b")
	call("a") // a is now the most recent
	call("c") // evicts b
	if call("a"); h.probe.runs.Load() != 4 {
		t.Errorf("a evicted: %d runs", h.probe.runs.Load())
	}
	if call("b"); h.probe.runs.Load() != 5 {
		t.Errorf("b not evicted: %d runs", h.probe.runs.Load())
	}
	c, _ := session.Resource(h.session(cs), cacheKey)
	if c.len() != 2 {
		t.Errorf("%d entries, want 2", c.len())
	}
}

// TestCacheNoStaleStore: a result computed before an invalidation is not
// stored after it.
func TestCacheNoStaleStore(t *testing.T) {
	c := newResultCache(10)
	gen := c.generation()
	c.invalidate()
	c.put("k", gen, &tools.Outcome{Success: true}, time.Now())
	if c.len() != 0 {
		t.Error("stored a result computed before the invalidation")
	}
}

func jsonArgs(t testing.TB, s string) any {
	return rawJSON(s)
}

// rawJSON marshals as itself.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

var _ = fmt.Sprint

// TestCacheSkipsDryRuns: a dry run is neither answered from the cache
// nor kept in it, and does not empty it.
func TestCacheSkipsDryRuns(t *testing.T) {
	h := newHarness(t, Config{Cache: CacheConfig{Enabled: true}})
	cs := h.client("s1")
	ctx := context.Background()
	dry := map[string]any{"io.github.wink-mcp/dryRun": true}
	cs.Call(ctx, "p_read", jsonArgs(t, `{"key":"a"}`), nil)
	if r := cs.Call(ctx, "p_read", jsonArgs(t, `{"key":"a"}`), dry); r.IsError || !strings.HasPrefix(r.Text(), "Dry run: nothing was changed.") || h.probe.runs.Load() != 2 {
		t.Errorf("a dry run of a cached call: %+v after %d runs", r, h.probe.runs.Load())
	}
	cs.Call(ctx, "p_write", map[string]any{"by": 5}, dry)
	if r := cs.Call(ctx, "p_read", jsonArgs(t, `{"key":"a"}`), nil); strings.HasPrefix(r.Text(), "Dry run") || h.probe.runs.Load() != 2 {
		t.Errorf("after dry runs: %q after %d runs", r.Text(), h.probe.runs.Load())
	}
}
