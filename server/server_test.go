package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/session"
)

// TestFailureTable checks every row of the runtime specification's failure
// table: the client gets an isError result with the stated text (never a
// JSON-RPC error, except for an unknown tool), and the state is unchanged or
// restored.
func TestFailureTable(t *testing.T) {
	tests := []struct {
		name  string
		tool  string
		args  any
		meta  map[string]any
		want  string
		class string
	}{
		{"schema", "probe_add", map[string]any{"by": "1", "extra": true}, nil,
			"Invalid arguments: /by: expected integer, got string; /extra: unknown field", "validation"},
		{"missing field", "probe_add", map[string]any{}, nil,
			"Invalid arguments: /by: required field is missing", "validation"},
		{"no params rejects any key", "probe_get", map[string]any{"x": 1}, nil,
			"Invalid arguments: /x: unknown field", "validation"},
		{"policy denies", "probe_add", map[string]any{"by": 1}, nil,
			"Tool 'probe_add' requires: probe_get", "policy"},
		{"deadline expired", "probe_add", map[string]any{"by": 1}, map[string]any{"io.wink-mcp/deadline": "2000-01-01T00:00:00Z"},
			"Deadline expired before executing tool 'probe_add'.", "deadline"},
		{"failure result", "probe_fail", map[string]any{"by": 1}, nil, "Nothing doing.", "failure"},
		{"go error", "probe_error", map[string]any{"by": 1}, nil, "Tool 'probe_error' failed: boom", "error"},
		{"panic", "probe_panic", map[string]any{"by": 1}, nil, "Tool 'probe_panic' failed: internal error", "panic"},
		{"reducer error", "probe_poison", map[string]any{"by": 1}, nil,
			`Tool 'probe_poison' failed: reducer for server_test.poisoned on slice "probe.count": poisoned`, "error"},
		{"on-result error", "probe_add", map[string]any{"by": -13}, nil, "Tool 'probe_add' failed: unlucky", "error"},
		{"outlives deadline", "probe_block", map[string]any{"by": 1}, map[string]any{"io.wink-mcp/timeoutMs": 20},
			"Tool 'probe_block' exceeded its deadline (20ms).", "deadline"},
		{"outlives deadline and says where it stopped", "probe_stop", map[string]any{"by": 1}, map[string]any{"io.wink-mcp/timeoutMs": 20},
			"Tool 'probe_stop' exceeded its deadline (20ms). Stopped before step 2.", "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps := map[string][]string{}
			if tt.name == "policy denies" {
				deps["probe_add"] = []string{"probe_get"}
			}
			h := newHarness(t, time.Minute, policy.NewSequentialDependency(deps))
			cs := newClientSession("s1")
			ctx := context.Background()
			if tt.name != "policy denies" {
				if tr, _ := h.call(ctx, cs, "probe_add", map[string]any{"by": 5}, nil); tr.IsError {
					t.Fatalf("setup call failed: %s", text(tr))
				}
			}
			before := h.count(cs)
			tr, r := h.call(ctx, cs, tt.tool, tt.args, tt.meta)
			if r.Error != nil {
				t.Fatalf("got JSON-RPC error %d %q, want an isError result", r.Error.Code, r.Error.Message)
			}
			if !tr.IsError || text(tr) != tt.want {
				t.Errorf("got isError=%v %q, want isError=true %q", tr.IsError, text(tr), tt.want)
			}
			if tr.StructuredContent != nil {
				t.Errorf("error result carries structured content %v", tr.StructuredContent)
			}
			if got := h.count(cs); got != before {
				t.Errorf("count = %d after the failed call, want %d (unchanged or restored)", got, before)
			}
			log := lastInvocation(t, h, cs)
			if log.Tool != tt.tool || log.Success || log.ErrorClass != tt.class || log.Message != tt.want {
				t.Errorf("logged %+v, want tool %s class %s", log, tt.tool, tt.class)
			}
			// The server keeps serving.
			if tr, _ := h.call(ctx, cs, "probe_get", map[string]any{}, nil); tr.IsError || tr.StructuredContent["count"] != float64(before) {
				t.Errorf("after the failure: %s %v", text(tr), tr.StructuredContent)
			}
		})
	}
}

func lastInvocation(t *testing.T, h *harness, cs *clientSession) session.ToolInvoked {
	t.Helper()
	s, err := h.srv.Sessions().Get(cs.id)
	if err != nil {
		t.Fatal(err)
	}
	log := session.Entries(s, session.Invocations)
	if len(log) == 0 {
		t.Fatal("no invocation recorded")
	}
	return log[len(log)-1]
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("s1")
	_, r := h.call(context.Background(), cs, "nope", map[string]any{}, nil)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("got %+v, want JSON-RPC error -32602", r)
	}
	s, _ := h.srv.Sessions().Get(cs.id)
	if n := len(session.Entries(s, session.Invocations)); n != 0 {
		t.Errorf("an unknown tool was recorded (%d entries); lookup failures are not invocations", n)
	}
}

// TestCancellation cancels a running call with notifications/cancelled: the
// client gets "was cancelled." and the call's change is restored.
func TestCancellation(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("s1")
	ctx := context.Background()
	const id = 4242
	done := make(chan response)
	go func() {
		done <- h.send(ctx, cs, map[string]any{"id": id, "method": "tools/call",
			"params": map[string]any{"name": "probe_block", "arguments": map[string]any{"by": 3}}})
	}()
	// Cancel until the call has started and noticed; a cancellation sent
	// before the request is registered is ignored, as the spec allows.
	var r response
	for r.Result == nil && r.Error == nil {
		h.send(ctx, cs, map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
		select {
		case r = <-done:
		case <-time.After(10 * time.Millisecond):
		}
	}
	var tr toolResult
	if err := json.Unmarshal(r.Result, &tr); err != nil {
		t.Fatal(err)
	}
	if !tr.IsError || text(tr) != "Tool 'probe_block' was cancelled." {
		t.Fatalf("got %q", text(tr))
	}
	if n := h.count(cs); n != 0 {
		t.Errorf("count = %d, want 0 (restored)", n)
	}
}

func TestSuccessRendering(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("s1")
	ctx := context.Background()
	tr, _ := h.call(ctx, cs, "probe_add", map[string]any{"by": 2}, nil)
	if tr.IsError || text(tr) != "Added 2.\n\n{\"count\":2}" || tr.StructuredContent["count"] != float64(2) {
		t.Fatalf("got %+v", tr)
	}
	tr, _ = h.call(ctx, cs, "probe_secret", map[string]any{}, nil)
	if tr.IsError || text(tr) != "Kept aside." || tr.StructuredContent != nil {
		t.Fatalf("excluded value leaked into the result: %+v", tr)
	}
	if len(tr.Content) != 2 || tr.Content[1].Type != "resource_link" {
		t.Fatalf("want a resource link to the excluded value, got %+v", tr.Content)
	}
	r := h.send(ctx, cs, map[string]any{"id": 1, "method": "resources/read", "params": map[string]any{"uri": tr.Content[1].URI}})
	if r.Error != nil {
		t.Fatalf("reading %s: %+v", tr.Content[1].URI, r.Error)
	}
	var rr struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if err := json.Unmarshal(r.Result, &rr); err != nil || len(rr.Contents) != 1 {
		t.Fatalf("bad resource result %s", r.Result)
	}
	var ev session.ToolInvoked
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &ev); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ev.Value) != "[big value]" {
		t.Errorf("resource holds value %v, want [big value]", ev.Value)
	}
}

// TestNotificationsBeforeResponse checks that a call's progress and log
// notifications are queued before its response is returned, with the
// request's progress token.
func TestNotificationsBeforeResponse(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("s1")
	ctx := context.Background()
	h.send(ctx, cs, map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	cs.Initialize()
	h.send(ctx, cs, map[string]any{"id": 2, "method": "logging/setLevel", "params": map[string]any{"level": "debug"}})
	tr, _ := h.call(ctx, cs, "probe_notify", map[string]any{}, map[string]any{"progressToken": "tok"})
	if tr.IsError {
		t.Fatal(text(tr))
	}
	var methods []string
	for len(cs.ch) > 0 {
		n := <-cs.ch
		methods = append(methods, n.Method)
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] != "tok" {
			t.Errorf("progress without the request's token: %+v", n.Params)
		}
	}
	want := "[notifications/progress notifications/progress notifications/progress notifications/message]"
	if fmt.Sprint(methods) != want {
		t.Errorf("notifications = %v, want %s", methods, want)
	}
}

// TestConcurrentCallsOneSession runs many calls at once on one session:
// they are serialised, so no increment is lost, and the failures among them
// restore only their own change.
func TestConcurrentCallsOneSession(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("s1")
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		tool := "probe_add"
		if i%3 == 0 {
			tool = "probe_fail"
		}
		if i%7 == 0 {
			tool = "probe_panic"
		}
		wg.Go(func() { h.call(ctx, cs, tool, map[string]any{"by": 1}, nil) })
	}
	wg.Wait()
	want := 0
	for i := range n {
		if i%3 != 0 && i%7 != 0 {
			want++
		}
	}
	if got := h.count(cs); got != want {
		t.Errorf("count = %d, want %d", got, want)
	}
	s, _ := h.srv.Sessions().Get(cs.id)
	if got := len(session.Entries(s, session.Invocations)); got != n {
		t.Errorf("%d invocations recorded, want %d", got, n)
	}
}

// TestSessionsAreIsolated runs many sessions in parallel: each sees only its
// own state.
func TestSessionsAreIsolated(t *testing.T) {
	h := newHarness(t, time.Minute)
	ctx := context.Background()
	const sessions, calls = 16, 25
	var wg sync.WaitGroup
	css := make([]*clientSession, sessions)
	for i := range css {
		css[i] = newClientSession(fmt.Sprintf("s%d", i))
		cs, by := css[i], i+1
		wg.Go(func() {
			for range calls {
				if tr, r := h.call(ctx, cs, "probe_add", map[string]any{"by": by}, nil); tr.IsError || r.Error != nil {
					t.Errorf("session %s: %s %+v", cs.id, text(tr), r.Error)
				}
			}
		})
	}
	wg.Wait()
	for i, cs := range css {
		if got, want := h.count(cs), (i+1)*calls; got != want {
			t.Errorf("session %s: count = %d, want %d", cs.id, got, want)
		}
	}
}

func TestSessionEndsWithClient(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := newClientSession("gone")
	ctx := context.Background()
	if err := h.srv.MCP().RegisterSession(ctx, cs); err != nil {
		t.Fatal(err)
	}
	h.call(ctx, cs, "probe_add", map[string]any{"by": 1}, nil)
	if h.srv.Sessions().Len() != 1 {
		t.Fatalf("sessions = %d, want 1", h.srv.Sessions().Len())
	}
	h.srv.MCP().UnregisterSession(ctx, cs.id)
	if h.srv.Sessions().Len() != 0 {
		t.Errorf("sessions = %d after the client left, want 0", h.srv.Sessions().Len())
	}
}
