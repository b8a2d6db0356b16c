package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// TestCallLogOutlivesTheProcess: a session's call log is read from the
// store, so a server started on the same store after the first one closed
// lists the same calls and returns their records; a call id the log does
// not hold is not found; the log of a connection's session outlives the
// connection, as the session does.
func TestCallLogOutlivesTheProcess(t *testing.T) {
	st := store.NewMemory(store.Options{})
	ctx := context.Background()
	first := newStoredServer(t, st)
	c := mcptest.NewClient(t, first.MCP(), "")
	h := c.Call(ctx, "probe_add", map[string]any{"by": 3}, modern(nil)).Session()
	c.Call(ctx, "probe_fail", map[string]any{"by": 4, "session": h}, modern(nil))
	c.Call(ctx, "probe_get", map[string]any{"session": h}, modern(nil))
	first.Close()

	second := newStoredServer(t, st)
	defer second.Close()
	c = mcptest.NewClient(t, second.MCP(), "")
	meta := modern(map[string]any{server.MetaSession: h})
	var log []session.CallSummary
	if err := json.Unmarshal([]byte(readText(t, c, server.LogURI, meta)), &log); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sum := range log {
		got = append(got, sum.Tool+" "+sum.ErrorClass+" "+sum.Args)
	}
	want := []string{"probe_add  {\"by\":3}", "probe_fail failure {\"by\":4}", "probe_get  {}"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log after the restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var ev session.ToolInvoked
	if err := json.Unmarshal([]byte(readText(t, c, "wink://session/calls/"+log[1].CallID, meta)), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.CallID != log[1].CallID || ev.Tool != "probe_fail" || ev.Message != "Nothing doing." || ev.Success {
		t.Errorf("record of the failed call: %+v", ev)
	}
	_, rpcErr := c.Send(ctx, "resources/read", map[string]any{"uri": "wink://session/calls/0000", "_meta": meta})
	if rpcErr == nil || !strings.Contains(rpcErr.Message, "not found") {
		t.Errorf("an unknown call id: %+v", rpcErr)
	}

	legacy := mcptest.NewClient(t, second.MCP(), "legacy")
	if err := second.MCP().RegisterSession(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	lh := legacy.Call(ctx, "probe_add", map[string]any{"by": 1}, nil).Session()
	second.MCP().UnregisterSession(ctx, "legacy")
	second.Close() // the queued records reach the store
	if recs, err := st.ReadLog(ctx, lh, 10); err != nil || len(recs) != 1 {
		t.Errorf("the log of a connection's session once the connection ended: %d records, %v; want its one call", len(recs), err)
	}
}

// unlogged is a store that refuses every call log entry.
type unlogged struct{ store.Store }

func (unlogged) AppendLog(context.Context, string, ...[]byte) error { return store.ErrUnavailable }

// TestCallLogAppendFails: a store that refuses the call's record fails
// no call; the loss is logged as a warning.
func TestCallLogAppendFails(t *testing.T) {
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncWriter
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Store: unlogged{store.NewMemory(store.Options{})},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := mcptest.NewClient(t, srv.MCP(), "")
	r := c.Call(context.Background(), "probe_add", map[string]any{"by": 2}, modern(nil))
	if r.IsError || r.StructuredContent["count"] != float64(2) {
		t.Fatalf("the call: %+v", r)
	}
	if text := readText(t, c, server.LogURI, modern(map[string]any{server.MetaSession: r.Session()})); text != "[]" {
		t.Errorf("log = %s, want [] (the record was refused)", text)
	}
	srv.Close()
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "session="+session.LogID(r.Session())) || !strings.Contains(got, store.ErrUnavailable.Error()) {
		t.Errorf("the refused record is not in the logs:\n%s", got)
	}
}

// TestCallLogMemory: calls of 100 KB of arguments each leave the server's
// retained heap where it was after the first few: nothing of a call stays
// in memory once the store has its record (which here keeps the last 16).
// Before the log moved to the store, each call kept its 100 KB, 15 MB over
// these calls. (Each call costs milliseconds of JSON, more under the race
// detector, hence not 4,000 of them.)
func TestCallLogMemory(t *testing.T) {
	const warm, calls, size = 20, 170, 100 << 10
	bulk := &sections.Section{
		Key: "bulk", Title: "Bulk", Guidance: "Takes large arguments.",
		Tools: []*tools.Tool{tools.New("bulk_put", "Take a text.", tools.Annotations{Title: "Put", ReadOnly: true},
			func(_ *tools.Context, p struct {
				Text string `json:"text" jsonschema:"Any text."`
			}) (tools.Result[int], error) {
				return tools.OK("Taken.", len(p.Text)), nil
			})},
	}
	tree, err := sections.NewTree(bulk)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Store: store.NewMemory(store.Options{LogRetention: 16}),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := mcptest.NewClient(t, srv.MCP(), "conn")
	args := map[string]any{"text": strings.Repeat("x", size)}
	heap := func() uint64 {
		readText(t, c, server.LogURI, nil) // after the queued records
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var before uint64
	start := time.Now()
	for i := range calls {
		if i == warm {
			before = heap()
		}
		if r := c.Call(context.Background(), "bulk_put", args, nil); r.IsError {
			t.Fatalf("call %d: %s", i, r.Text())
		}
	}
	after := heap()
	t.Logf("%d calls in %v; heap %d KiB after %d calls, %d KiB after %d", calls, time.Since(start), before>>10, warm, after>>10, calls)
	if after > before+8<<20 {
		t.Errorf("retained heap grew by %d MiB over %d calls of %d KiB, want less than 8 MiB", (after-before)>>20, calls-warm, size>>10)
	}
}
