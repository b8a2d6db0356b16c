package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// sseClient speaks the legacy HTTP+SSE transport: one GET stream for
// everything the server sends, POSTs to the announced endpoint.
type sseClient struct {
	t        testing.TB
	base     string
	endpoint string
	resp     *http.Response

	mu      sync.Mutex
	nextID  int
	waiting map[string]chan []msg // responses by id, with what preceded them
	seen    []msg
	log     []msg // every message, in stream order
}

func dialSSE(t testing.TB, base string) *sseClient {
	t.Helper()
	resp, err := http.Get(base + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	c := &sseClient{t: t, base: base, resp: resp, waiting: map[string]chan []msg{}}
	next := sseEvents(resp.Body)
	endpoint := make(chan string, 1)
	go func() {
		first := true
		for ev := range next {
			if first {
				first = false
				endpoint <- ev.data
				continue
			}
			var m msg
			if json.Unmarshal([]byte(ev.data), &m) != nil {
				continue
			}
			c.mu.Lock()
			c.seen = append(c.seen, m)
			c.log = append(c.log, m)
			if m.isResponse() {
				if ch := c.waiting[string(m.ID)]; ch != nil {
					ch <- c.seen
					c.seen = nil
					delete(c.waiting, string(m.ID))
				}
			}
			c.mu.Unlock()
		}
		close(endpoint)
	}()
	c.endpoint = <-endpoint
	if !strings.HasPrefix(c.endpoint, "/message?sessionId=") {
		t.Fatalf("endpoint event: %q", c.endpoint)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return c
}

// request posts a request and waits for its response on the stream; it
// returns every message the stream carried since the previous response
// that was waited for, the response last.
func (c *sseClient) request(method string, params any) []msg {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan []msg, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	c.post(map[string]any{"jsonrpc": "2.0", "id": c.nextIDValue(id), "method": method, "params": params})
	return <-ch
}

func (c *sseClient) nextIDValue(id string) json.RawMessage { return json.RawMessage(id) }

func (c *sseClient) post(body any) {
	c.t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(c.base+c.endpoint, "application/json", bytes.NewReader(data))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST %s: %d", c.endpoint, resp.StatusCode)
	}
}

func (c *sseClient) initialize() {
	c.request("initialize", map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "sse", "version": "1"}})
	c.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// TestSSENotificationsPrecedeResponse runs notifying calls, one after the
// other and concurrently, over the SSE transport: each call's
// notifications come before its response on the shared stream.
func TestSSENotificationsPrecedeResponse(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	c := dialSSE(t, f.url)
	c.initialize()
	c.request("logging/setLevel", map[string]any{"level": "info"})

	want := map[string]int{} // token -> its notifications
	var mu sync.Mutex
	check := func(token string, n int) {
		msgs := c.request("tools/call", map[string]any{"name": "notify", "arguments": map[string]any{"n": n, "token": token}, "_meta": map[string]any{"progressToken": token}})
		if last := msgs[len(msgs)-1]; last.text(t) != "done "+token {
			t.Errorf("%s: response %q", token, last.text(t))
		}
		mu.Lock()
		want[token] = 2 * n
		mu.Unlock()
	}
	for i := range 50 {
		check(fmt.Sprintf("s%d", i), 3)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				check(fmt.Sprintf("c%d-%d", w, i), 2)
			}
		})
	}
	wg.Wait()
	// Concurrent calls interleave with each other on the one stream, but
	// every notification of a call comes before its own response.
	c.mu.Lock()
	defer c.mu.Unlock()
	before := map[string]int{}
	answered := map[string]bool{}
	for _, m := range c.log {
		if m.isResponse() {
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			if json.Unmarshal(m.Result, &r) == nil && len(r.Content) > 0 {
				if tok, ok := strings.CutPrefix(r.Content[0].Text, "done "); ok {
					answered[tok] = true
				}
			}
			continue
		}
		for tok := range want {
			if strings.Contains(string(m.Params), `"`+tok+`"`) || strings.Contains(string(m.Params), `"`+tok+`-`) {
				if answered[tok] {
					t.Errorf("%s: notification after its response: %s", tok, m.Params)
				}
				before[tok]++
			}
		}
	}
	for tok, n := range want {
		if before[tok] != n {
			t.Errorf("%s: %d of its %d notifications came before its response", tok, before[tok], n)
		}
	}
}

// TestSSESessionsAreIsolatedAndEndWithTheConnection gives each SSE
// connection its own plan and ends the session when the connection closes.
func TestSSESessionsAreIsolatedAndEndWithTheConnection(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	a, b := dialSSE(t, f.url), dialSSE(t, f.url)
	a.initialize()
	b.initialize()
	a.request("tools/call", map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "sse alpha"}})
	msgs := b.request("tools/call", map[string]any{"name": "planning_read_plan", "arguments": map[string]any{}})
	if txt := msgs[len(msgs)-1].text(t); strings.Contains(txt, "alpha") {
		t.Fatalf("b sees a's plan: %q", txt)
	}
	if f.srv.Sessions().Len() != 2 {
		t.Fatalf("%d server sessions, want 2", f.srv.Sessions().Len())
	}
	a.resp.Body.Close()
	waitFor(t, "a's session to end", func() bool { return f.srv.Sessions().Len() == 1 && f.ht.sessionCount() == 1 })
	// A message for the ended session is refused.
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
	resp, err := http.Post(f.url+a.endpoint, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST to an ended session: %d, want 404", resp.StatusCode)
	}
}
