package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// deafMeta is the _meta of a call of the deaf tool: a deadline of 50 ms,
// which its handler does not hear, and a progress token.
var deafMeta = map[string]any{"io.github.wink-mcp/timeoutMs": 50, "progressToken": "p"}

const deafAnswer = "Tool 'deaf' exceeded its deadline (50ms)."

// overrunBound is how soon after it was sent a call 50 ms from its
// deadline must be answered: the deadline, the second of grace, and room
// for a slow machine.
const overrunBound = 10 * time.Second

// TestStdioOverrunAnswered: over stdio, a call whose handler ignores its
// deadline is answered a second after it, from where responses are
// written, after the progress it sent; the server serves on meanwhile.
func TestStdioOverrunAnswered(t *testing.T) {
	c := startWinkStdio(t)
	for _, n := range []int{0, 1} {
		id := fmt.Sprint("deaf", n)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
			"name": "deaf", "arguments": map[string]any{"n": n, "token": id}, "_meta": deafMeta,
		}})
		start := time.Now()
		c.sendLine(string(b))
		m := c.next()
		for m.Method != "" {
			m = c.next() // progress
		}
		if string(m.ID) != quote(id) {
			t.Fatalf("got %s, want the response to %s", m.raw, id)
		}
		// The second waits for the first, still running, to let go of
		// its session, and says so.
		if text, isErr := m.toolText(t); !isErr || !strings.HasPrefix(text, deafAnswer) {
			t.Fatalf("%s: %q (isError %v)", id, text, isErr)
		}
		if d := time.Since(start); d > overrunBound {
			t.Errorf("%s answered after %v", id, d)
		}
	}
	c.sendLine(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	c.expectResult(`"ping"`)
}

// TestHTTPOverrunAnswered: over Streamable HTTP, in both protocol eras, a
// call whose handler ignores its deadline is answered a second after it:
// as JSON, or as the last event of the stream its progress began.
func TestHTTPOverrunAnswered(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	for _, n := range []int{0, 1} {
		args := map[string]any{"n": n, "token": "legacy"}
		t.Run(fmt.Sprint("2025-11-25/", n), func(t *testing.T) {
			legacy := newClient(t, f.url) // a session of its own: the call keeps it
			legacy.initialize()
			start := time.Now()
			msgs := legacy.request("tools/call", map[string]any{"name": "deaf", "arguments": args, "_meta": deafMeta})
			if got := msgs[len(msgs)-1].text(t); !strings.HasPrefix(got, deafAnswer) {
				t.Errorf("answered %q", got)
			}
			if len(msgs) != n+1 {
				t.Errorf("%d messages, want %d progress and the response", len(msgs), n)
			}
			if d := time.Since(start); d > overrunBound {
				t.Errorf("answered after %v", d)
			}
		})
		t.Run(fmt.Sprint("2026-07-28/", n), func(t *testing.T) {
			meta := map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern", "version": "1"},
			}
			for k, v := range deafMeta {
				meta[k] = v
			}
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
				"name": "deaf", "arguments": args, "_meta": meta,
			}})
			req, _ := http.NewRequest(http.MethodPost, f.url+"/mcp", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "deaf")
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var last msg
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				for ev := range sseEvents(resp.Body) {
					var m msg
					if ev.data != "" && json.Unmarshal([]byte(ev.data), &m) == nil && m.isResponse() {
						last = m
						break
					}
				}
			} else {
				data, _ := io.ReadAll(resp.Body)
				if err := json.Unmarshal(data, &last); err != nil {
					t.Fatalf("%s: %v", data, err)
				}
			}
			if got := last.text(t); !strings.HasPrefix(got, deafAnswer) {
				t.Errorf("answered %q", got)
			}
			if !bytes.Contains(last.Result, []byte(`"resultType":"complete"`)) {
				t.Errorf("the answer lacks the result type of its era: %s", last.Result)
			}
			if d := time.Since(start); d > overrunBound {
				t.Errorf("answered after %v", d)
			}
		})
	}
	after := newClient(t, f.url)
	after.initialize()
	if got := after.request("tools/call", map[string]any{"name": "notify", "arguments": map[string]any{"n": 0, "token": "after"}}); got[len(got)-1].text(t) != "done after" {
		t.Errorf("a call after the overruns: %q", got[len(got)-1].text(t))
	}
}
