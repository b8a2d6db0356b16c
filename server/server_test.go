package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
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
			"Invalid arguments: /by: expected integer, got string. Unknown argument 'extra'. probe_add takes: by, session.", "validation"},
		{"unknown argument named", "probe_add", map[string]any{"By": 1}, nil,
			"Unknown argument 'By'; did you mean 'by'? probe_add takes: by, session.", "validation"},
		{"missing field", "probe_add", map[string]any{}, nil,
			"Invalid arguments: /by: required field is missing", "validation"},
		{"no params rejects any key", "probe_get", map[string]any{"x": 1}, nil,
			"Unknown argument 'x'. probe_get takes: session.", "validation"},
		{"policy denies", "probe_add", map[string]any{"by": 1}, nil,
			"Tool 'probe_add' requires: probe_get", "policy"},
		{"deadline expired", "probe_add", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/deadline": "2000-01-01T00:00:00Z"},
			"Deadline expired before executing tool 'probe_add'.", "deadline"},
		{"former deadline key", "probe_add", map[string]any{"by": 1}, map[string]any{"io.wink-mcp/deadline": "2000-01-01T00:00:00Z"},
			"Deadline expired before executing tool 'probe_add'.", "deadline"},
		{"timeoutMs not a number", "probe_add", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/timeoutMs": "abc"},
			`Invalid _meta: io.github.wink-mcp/timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got "abc"`, "validation"},
		{"timeoutMs negative", "probe_add", map[string]any{"by": 1}, map[string]any{"io.wink-mcp/timeoutMs": -5},
			`Invalid _meta: io.github.wink-mcp/timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got -5`, "validation"},
		{"timeoutMs huge", "probe_add", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/timeoutMs": 1e300},
			`Invalid _meta: io.github.wink-mcp/timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got 1e+300`, "validation"},
		{"deadline not a time", "probe_add", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/deadline": 5},
			`Invalid _meta: io.github.wink-mcp/deadline: expected an RFC 3339 time such as "2026-11-21T12:00:00Z", got 5`, "validation"},
		{"failure result", "probe_fail", map[string]any{"by": 1}, nil, "Nothing doing.", "failure"},
		{"go error", "probe_error", map[string]any{"by": 1}, nil, "Tool 'probe_error' failed: boom", "error"},
		{"panic", "probe_panic", map[string]any{"by": 1}, nil, "Tool 'probe_panic' failed: internal error", "panic"},
		{"reducer error", "probe_poison", map[string]any{"by": 1}, nil,
			`Tool 'probe_poison' failed: reducer for server_test.poisoned on slice "probe.count": poisoned`, "error"},
		{"on-result error", "probe_add", map[string]any{"by": -13}, nil, "Tool 'probe_add' failed: unlucky", "error"},
		{"outlives deadline", "probe_block", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/timeoutMs": 20},
			"Tool 'probe_block' exceeded its deadline (20ms).", "deadline"},
		{"outlives deadline and says where it stopped", "probe_stop", map[string]any{"by": 1}, map[string]any{"io.github.wink-mcp/timeoutMs": 20},
			"Tool 'probe_stop' exceeded its deadline (20ms). Stopped before step 2.", "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps := map[string][]string{}
			if tt.name == "policy denies" {
				deps["probe_add"] = []string{"probe_get"}
			}
			h := newHarness(t, time.Minute, policy.NewSequentialDependency(deps))
			cs := h.client("s1")
			ctx := context.Background()
			if tt.name != "policy denies" {
				if r := cs.Call(ctx, "probe_add", map[string]any{"by": 5}, nil); r.IsError {
					t.Fatalf("setup call failed: %s", r.Text())
				}
			}
			before := h.count(cs)
			tr := cs.Call(ctx, tt.tool, tt.args, tt.meta)
			if !tr.IsError || tr.Text() != tt.want {
				t.Errorf("got isError=%v %q, want isError=true %q", tr.IsError, tr.Text(), tt.want)
			}
			if tr.StructuredContent != nil {
				t.Errorf("error result carries structured content %v", tr.StructuredContent)
			}
			if got := h.count(cs); got != before {
				t.Errorf("count = %d after the failed call, want %d (unchanged or restored)", got, before)
			}
			log := h.last(cs)
			if log.Tool != tt.tool || log.Success || log.ErrorClass != tt.class || log.Message != tt.want {
				t.Errorf("logged %+v, want tool %s class %s", log, tt.tool, tt.class)
			}
			// The server keeps serving.
			if r := cs.Call(ctx, "probe_get", map[string]any{}, nil); r.IsError || r.StructuredContent["count"] != float64(before) {
				t.Errorf("after the failure: %s %v", r.Text(), r.StructuredContent)
			}
		})
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := h.client("s1")
	raw, rpcErr := cs.Send(context.Background(), "tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}})
	if rpcErr == nil || rpcErr.Code != -32602 {
		t.Fatalf("got %s %+v, want JSON-RPC error -32602", raw, rpcErr)
	}
	if n := len(h.calls(cs)); n != 0 {
		t.Errorf("an unknown tool was recorded (%d entries); lookup failures are not invocations", n)
	}
}

// TestCancellation cancels a running call with notifications/cancelled: the
// client gets "was cancelled." and the call's change is restored.
func TestCancellation(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := h.client("s1")
	ctx := context.Background()
	done := make(chan mcptest.Result)
	go func() { done <- cs.Call(ctx, "probe_block", map[string]any{"by": 3}, nil) }()
	// Cancel request 1, the call, until it has started and noticed; a
	// cancellation sent before the request is registered is ignored, as
	// the spec allows.
	var r mcptest.Result
wait:
	for {
		cs.Notify(ctx, "notifications/cancelled", map[string]any{"requestId": 1})
		select {
		case r = <-done:
			break wait
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !r.IsError || r.Text() != "Tool 'probe_block' was cancelled." {
		t.Fatalf("got %q", r.Text())
	}
	if n := h.count(cs); n != 0 {
		t.Errorf("count = %d, want 0 (restored)", n)
	}
}

// TestOverrunningCall: a handler that ignores its deadline still has its
// call answered, a second after the deadline; the session's next call,
// which waits for it in vain, says which call holds the session; once the
// handler returns, its change is restored and the session serves again.
func TestOverrunningCall(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := h.client("s1")
	ctx := context.Background()
	short := map[string]any{"io.github.wink-mcp/timeoutMs": 50}
	start := time.Now()
	r := cs.Call(ctx, "probe_deaf", map[string]any{"by": 3}, short)
	if !r.IsError || r.Text() != "Tool 'probe_deaf' exceeded its deadline (50ms)." {
		t.Fatalf("got %q", r.Text())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("answered after %v", d)
	}
	r = cs.Call(ctx, "probe_add", map[string]any{"by": 1}, short)
	if !r.IsError || !strings.HasPrefix(r.Text(), "Tool 'probe_add' exceeded its deadline (50ms). Its session is held by call ") ||
		!strings.Contains(r.Text(), " of 'probe_deaf', which overran its deadline by ") {
		t.Fatalf("got %q", r.Text())
	}
	hear <- struct{}{}
	for i := 0; ; i++ {
		r = cs.Call(ctx, "probe_add", map[string]any{"by": 1}, nil)
		if !r.IsError {
			break
		}
		if i == 100 {
			t.Fatalf("the session is still held: %q", r.Text())
		}
	}
	if n := h.count(cs); n != 1 {
		t.Errorf("count = %d, want 1: the overrunning call's change restored", n)
	}
}

func TestSuccessRendering(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := h.client("s1")
	ctx := context.Background()
	tr := cs.Call(ctx, "probe_add", map[string]any{"by": 2}, nil)
	handle := h.session(cs).ID()
	if tr.IsError || tr.Text() != "Added 2.\n\n{\"count\":2}\n\nSession: "+handle || tr.StructuredContent["count"] != float64(2) || tr.Session() != handle {
		t.Fatalf("got %+v", tr)
	}
	tr = cs.Call(ctx, "probe_secret", map[string]any{}, nil)
	if tr.IsError || tr.Text() != "Kept aside." || tr.StructuredContent != nil {
		t.Fatalf("excluded value leaked into the result: %+v", tr)
	}
	if len(tr.Content) != 2 || tr.Content[1].Type != "resource_link" {
		t.Fatalf("want a resource link to the excluded value, got %+v", tr.Content)
	}
	// A tool with an output schema sends its value as structured content
	// all the same, so that the result is valid for the schema.
	if ta := cs.Call(ctx, "probe_aside", map[string]any{}, nil); ta.IsError || ta.StructuredContent["count"] != float64(7) || len(ta.Content) != 2 || ta.Content[1].Type != "resource_link" {
		t.Fatalf("got %+v", ta)
	}
	raw, rpcErr := cs.Send(ctx, "resources/read", map[string]any{"uri": tr.Content[1].URI})
	if rpcErr != nil {
		t.Fatalf("reading %s: %+v", tr.Content[1].URI, rpcErr)
	}
	var rr struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if err := json.Unmarshal(raw, &rr); err != nil || len(rr.Contents) != 1 {
		t.Fatalf("bad resource result %s", raw)
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
	cs := h.client("s1")
	ctx := context.Background()
	cs.Send(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	cs.Send(ctx, "logging/setLevel", map[string]any{"level": "debug"})
	if r := cs.Call(ctx, "probe_notify", map[string]any{}, map[string]any{"progressToken": "tok"}); r.IsError {
		t.Fatal(r.Text())
	}
	var methods []string
	for _, n := range cs.Notifications() {
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
	cs := h.client("s1")
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
		wg.Go(func() { cs.Call(ctx, tool, map[string]any{"by": 1}, nil) })
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
	if got := len(h.calls(cs)); got != n {
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
	css := make([]*mcptest.Client, sessions)
	for i := range css {
		css[i] = h.client(fmt.Sprintf("s%d", i))
		cs, by := css[i], i+1
		wg.Go(func() {
			for range calls {
				if r := cs.Call(ctx, "probe_add", map[string]any{"by": by}, nil); r.IsError {
					t.Errorf("session %s: %s", cs.SessionID(), r.Text())
				}
			}
		})
	}
	wg.Wait()
	for i, cs := range css {
		if got, want := h.count(cs), (i+1)*calls; got != want {
			t.Errorf("session %s: count = %d, want %d", cs.SessionID(), got, want)
		}
	}
}

func TestSessionEndsWithClient(t *testing.T) {
	h := newHarness(t, time.Minute)
	cs := h.client("gone")
	ctx := context.Background()
	if err := h.srv.MCP().RegisterSession(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cs.Call(ctx, "probe_add", map[string]any{"by": 1}, nil)
	if h.srv.Sessions().Len() != 1 {
		t.Fatalf("sessions = %d, want 1", h.srv.Sessions().Len())
	}
	h.srv.MCP().UnregisterSession(ctx, cs.SessionID())
	if h.srv.Sessions().Len() != 0 {
		t.Errorf("sessions = %d after the client left, want 0", h.srv.Sessions().Len())
	}
}
