package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTwoClientsNeverSeeEachOthersPlan runs two real HTTP clients on one
// server: each sets up its own plan, and each reads back only its own.
func TestTwoClientsNeverSeeEachOthersPlan(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	a, b := newClient(t, f.url), newClient(t, f.url)
	a.initialize()
	b.initialize()
	if a.sid == b.sid {
		t.Fatal("two clients got the same session ID")
	}
	if got := a.callText("planning_setup_plan", map[string]any{"objective": "alpha goal", "initial_steps": []string{"a1"}}); !strings.Contains(got, "alpha goal") {
		t.Fatalf("a's setup: %q", got)
	}
	if got := b.callText("planning_read_plan", map[string]any{}); strings.Contains(got, "alpha") {
		t.Fatalf("b sees a's plan: %q", got)
	}
	b.callText("planning_setup_plan", map[string]any{"objective": "beta goal"})
	var wg sync.WaitGroup
	for _, c := range []*hclient{a, b} {
		wg.Go(func() {
			for range 20 {
				got := c.callText("planning_read_plan", map[string]any{})
				mine, theirs := "alpha", "beta"
				if c == b {
					mine, theirs = theirs, mine
				}
				if !strings.Contains(got, mine) || strings.Contains(got, theirs) {
					t.Errorf("session %s reads %q", c.sid, got)
					return
				}
			}
		})
	}
	wg.Wait()
	// The plan resources are per session too.
	for _, c := range []*hclient{a, b} {
		msgs := c.request("resources/read", map[string]any{"uri": "wink://planning/plan"})
		res := string(msgs[len(msgs)-1].Result)
		if (c == a) != strings.Contains(res, "alpha") || (c == b) != strings.Contains(res, "beta") {
			t.Errorf("session %s plan resource: %s", c.sid, res)
		}
	}
	if n := f.srv.Sessions().Len(); n != 2 {
		t.Errorf("server has %d sessions, want 2", n)
	}
}

// TestDeleteEndsSession checks that DELETE ends the session's state and
// that the session is unknown afterwards.
func TestDeleteEndsSession(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.initialize()
	c.callText("planning_setup_plan", map[string]any{"objective": "x"})
	if f.srv.Sessions().Len() != 1 || f.ht.sessionCount() != 1 {
		t.Fatalf("sessions: server %d, transport %d", f.srv.Sessions().Len(), f.ht.sessionCount())
	}
	if st := c.delete(); st != http.StatusNoContent {
		t.Fatalf("DELETE: %d", st)
	}
	if f.srv.Sessions().Len() != 0 || f.ht.sessionCount() != 0 {
		t.Fatalf("after DELETE: server %d, transport %d sessions", f.srv.Sessions().Len(), f.ht.sessionCount())
	}
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("request on a deleted session: %d, want 404", resp.StatusCode)
	}
	if st := c.delete(); st != http.StatusNotFound {
		t.Errorf("second DELETE: %d, want 404", st)
	}
}

// TestMissingOrUnknownSession checks 400 without Mcp-Session-Id and 404 with
// an unknown one, and that neither creates state.
func TestMissingOrUnknownSession(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "x"}}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no session header: %d, want 400", resp.StatusCode)
	}
	c.sid = "0123456789abcdef0123456789abcdef"
	resp = c.post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "x"}}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", resp.StatusCode)
	}
	if n := f.srv.Sessions().Len(); n != 0 {
		t.Errorf("%d server sessions, want 0", n)
	}
}

// TestIdleSessionsExpire drives the sweeper with an explicit clock: a
// session idle for longer than the TTL ends, an active one stays.
func TestIdleSessionsExpire(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	f := newHTTPFixture(t, HTTPOptions{SessionTTL: time.Hour, Now: clock})
	idle, busy := newClient(t, f.url), newClient(t, f.url)
	idle.initialize()
	busy.initialize()
	idle.callText("planning_setup_plan", map[string]any{"objective": "idle"})

	// busy has a call in flight across the TTL.
	done := make(chan []msg)
	go func() { done <- busy.call("block", map[string]any{"token": "busy"}) }()
	f.waitStarted(t)
	advance(2 * time.Hour)
	if n := f.ht.sweep(clock()); n != 1 {
		t.Fatalf("sweep ended %d sessions, want 1 (the idle one)", n)
	}
	if f.srv.Sessions().Len() != 1 {
		t.Errorf("server sessions after sweep: %d, want 1", f.srv.Sessions().Len())
	}
	resp := idle.post(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("expired session: %d, want 404", resp.StatusCode)
	}
	close(f.release)
	msgs := <-done
	if got := msgs[len(msgs)-1].text(t); got != "released busy" {
		t.Errorf("busy call: %q", got)
	}
	// Idle only from the end of its call on.
	advance(30 * time.Minute)
	if n := f.ht.sweep(clock()); n != 0 {
		t.Errorf("swept a session idle for less than the TTL")
	}
	advance(31 * time.Minute)
	if n := f.ht.sweep(clock()); n != 1 || f.srv.Sessions().Len() != 0 {
		t.Errorf("sweep ended %d; %d server sessions left", n, f.srv.Sessions().Len())
	}
}

// TestSweeperRuns checks that the sweeper goroutine ends idle sessions by
// itself, with a real clock and a short TTL.
func TestSweeperRuns(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{SessionTTL: 20 * time.Millisecond})
	c := newClient(t, f.url)
	c.initialize()
	c.callText("planning_setup_plan", map[string]any{"objective": "x"})
	waitFor(t, "the idle session to end", func() bool { return f.ht.sessionCount() == 0 && f.srv.Sessions().Len() == 0 })
}

// TestNotificationsPrecedeResponseHTTP calls a notifying tool many times,
// sequentially and concurrently on one session, and checks every time that
// all of a call's notifications arrive on its own stream, in order, before
// its response.
func TestNotificationsPrecedeResponseHTTP(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.initialize()
	c.request("logging/setLevel", map[string]any{"level": "debug"})
	check := func(token string, n int) {
		msgs := c.request("tools/call", map[string]any{"name": "notify", "arguments": map[string]any{"n": n, "token": token}, "_meta": map[string]any{"progressToken": token}})
		if len(msgs) != 2*n+1 {
			t.Errorf("%s: %d messages, want %d", token, len(msgs), 2*n+1)
			return
		}
		for i, m := range msgs[:2*n] {
			if m.Method == "" {
				t.Errorf("%s: message %d is not a notification", token, i)
				return
			}
			if !strings.Contains(string(m.Params), token) {
				t.Errorf("%s: got another call's notification %s", token, m.Params)
			}
		}
		last := msgs[2*n]
		if !last.isResponse() || last.text(t) != "done "+token {
			t.Errorf("%s: last message is not the response: %+v", token, last)
		}
	}
	for i := range 100 {
		check(fmt.Sprintf("seq%d", i), 3)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				check(fmt.Sprintf("w%d-%d", w, i), 4)
			}
		})
	}
	wg.Wait()
}

// TestSamplingAndElicitationOverHTTP answers the server's sampling and
// elicitation requests, which arrive on the call's own stream.
func TestSamplingAndElicitationOverHTTP(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.answer = func(m msg) any {
		switch m.Method {
		case "sampling/createMessage":
			return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hello from the model"}, "model": "m"}
		case "elicitation/create":
			return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		t.Errorf("unexpected request %s", m.Method)
		return map[string]any{}
	}
	c.initialize()
	if got := c.callText("sample", map[string]any{"token": "hi"}); got != "sampled hello from the model" {
		t.Errorf("sample: %q", got)
	}
	if got := c.callText("elicit", map[string]any{"token": "name?"}); got != "elicited accept map[name:Ada]" {
		t.Errorf("elicit: %q", got)
	}
}

// TestDisconnectCancelsCallWithoutStream has a client go away from a call
// that sent nothing yet, so that it holds no event ID to resume from: the
// call is cancelled and its change restored.
func TestDisconnectCancelsCallWithoutStream(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.initialize()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": "block", "arguments": map[string]any{"token": "gone"}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/mcp", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	f.waitStarted(t)
	cancel()
	<-done
	// The session's next call waits for the cancelled one, which would
	// otherwise run until its deadline of 30 seconds.
	start := time.Now()
	if got := c.callText("planning_read_plan", map[string]any{}); !strings.Contains(got, "No plan") {
		t.Errorf("after the cancelled call: %q", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call ran on for %v after its client went away", d)
	}
}

// TestResumeAfterServerClosesStream has a tool close its response stream
// mid-call; the client resumes with GET and Last-Event-ID and gets the rest:
// the notifications sent meanwhile and the response, nothing twice.
func TestResumeAfterServerClosesStream(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{SSERetry: 250 * time.Millisecond})
	c := newClient(t, f.url)
	c.initialize()
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "closer", "arguments": map[string]any{"token": "r"}, "_meta": map[string]any{"progressToken": "p"}}})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var first []sseEvent
	for ev := range sseEvents(resp.Body) {
		first = append(first, ev)
	}
	resp.Body.Close()
	if len(first) != 2 || first[0].data != "" || first[0].retry != "250" || first[0].id == "" {
		t.Fatalf("first connection: %+v, want the priming event (id, retry 250, no data) and one progress event", first)
	}
	if !strings.Contains(first[1].data, "before close") {
		t.Fatalf("second event: %+v", first[1])
	}
	f.waitStarted(t)
	close(f.release) // the call goes on while no connection is attached

	req, _ := http.NewRequest(http.MethodGet, f.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Last-Event-ID", first[1].id)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var rest []msg
	for ev := range sseEvents(resp2.Body) {
		var m msg
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			t.Fatalf("event %+v: %v", ev, err)
		}
		rest = append(rest, m)
	}
	if len(rest) != 2 || !strings.Contains(string(rest[0].Params), "after close") || !rest[1].isResponse() || rest[1].text(t) != "resumed r" {
		t.Fatalf("resumed events: %+v", rest)
	}
	// Resuming again from before the close replays both, then ends.
	req.Header.Set("Last-Event-ID", first[0].id)
	resp3, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp3.Body)
	resp3.Body.Close()
	if resp3.StatusCode == http.StatusOK && strings.Count(string(body), "data: {") != 3 {
		t.Errorf("replay from the priming event: %s", body)
	}
}

// TestStandaloneStreamAndUnknownEventID checks the GET stream opens with
// SSE headers and that an unknown Last-Event-ID gets 404.
func TestStandaloneStreamAndUnknownEventID(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.initialize()
	req, _ := http.NewRequest(http.MethodGet, f.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Last-Event-ID", "nope_3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown Last-Event-ID: %d, want 404", resp.StatusCode)
	}
	req.Header.Del("Last-Event-ID")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Ending the session ends the stream.
	c.delete()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestSessionNotificationsOnTheStandaloneStream subscribes to the plan and
// changes it: notifications/resources/updated, which concerns the session
// rather than the call, arrives on the GET stream, not on the call's.
func TestSessionNotificationsOnTheStandaloneStream(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := newClient(t, f.url)
	c.initialize()
	c.request("resources/subscribe", map[string]any{"uri": "wink://planning/plan"})
	ctx, cancel := context.WithTimeout(t.Context(), failsafe)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msgs := c.call("planning_setup_plan", map[string]any{"objective": "watched"})
	if len(msgs) != 1 || !msgs[0].isResponse() {
		t.Errorf("the call's stream carried %d messages, the first %q; want only its response", len(msgs), msgs[0].Method)
	}
	for ev := range sseEvents(resp.Body) {
		if ev.data == "" {
			continue
		}
		if !strings.Contains(ev.data, `"notifications/resources/updated"`) || !strings.Contains(ev.data, "wink://planning/plan") {
			t.Errorf("standalone stream: %s, want resources/updated for the plan", ev.data)
		}
		return
	}
	t.Error("no resources/updated on the standalone stream")
}

// TestNoLeakAfterManyShortLivedClients runs thousands of short-lived
// clients: some end with DELETE, the rest are left to the idle sweeper.
// Afterwards no session is left, in the transport or the server.
func TestNoLeakAfterManyShortLivedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("many clients")
	}
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newHTTPFixture(t, HTTPOptions{SessionTTL: time.Hour, Now: clock})
	const clients, workers = 2000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < clients; i += workers {
				c := newClient(t, f.url)
				c.hc = f.ts.Client()
				c.initialize()
				c.callText("planning_setup_plan", map[string]any{"objective": fmt.Sprintf("client %d", i)})
				if i%2 == 0 {
					if st := c.delete(); st != http.StatusNoContent {
						t.Errorf("DELETE: %d", st)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if got, want := f.srv.Sessions().Len(), clients/2; got != want {
		t.Errorf("before the sweep: %d server sessions, want %d", got, want)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	f.ht.sweep(clock())
	if f.ht.sessionCount() != 0 || f.srv.Sessions().Len() != 0 {
		t.Fatalf("after the sweep: transport %d, server %d sessions", f.ht.sessionCount(), f.srv.Sessions().Len())
	}
}

// TestMemoryFlatAfterSessionsEnd runs rounds of 64 concurrent sessions that
// each make calls and end: after every round, with its sessions gone, the
// heap and the goroutines are back where they were after the first.
func TestMemoryFlatAfterSessionsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("many clients")
	}
	f := newHTTPFixture(t, HTTPOptions{})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	measure := func() (uint64, int) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse, runtime.NumGoroutine()
	}
	var heap0 uint64
	var gor0 int
	for r := range 6 {
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				c := newClient(t, f.url)
				c.hc = hc
				c.initialize()
				for n := range 20 {
					c.callText("planning_setup_plan", map[string]any{"objective": fmt.Sprintf("r%d s%d c%d", r, i, n)})
				}
				c.delete()
			})
		}
		wg.Wait()
		if f.srv.Sessions().Len() != 0 || f.ht.sessionCount() != 0 {
			t.Fatalf("round %d: sessions left", r)
		}
		heap, gor := measure()
		if r == 0 {
			heap0, gor0 = heap, gor
			continue
		}
		// Connections come and go with the client's pool (a few goroutines
		// each), which does not grow with the rounds.
		if heap > heap0+4<<20 || gor > gor0+128 {
			t.Errorf("round %d: heap %d KiB (first %d KiB), goroutines %d (first %d)", r, heap>>10, heap0>>10, gor, gor0)
		}
	}
}
