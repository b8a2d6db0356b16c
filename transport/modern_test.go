package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestStatelessEraRequestsCarryTheirSession sends requests of the
// 2026-07-28 era, which mcp-go serves per request: they carry no protocol
// session, so a call that changes state starts a session and names its
// handle, a read without one is refused, and later calls continue the
// session by its handle, as an argument or in _meta.
func TestStatelessEraRequestsCarryTheirSession(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	send := func(tool string, args map[string]any, meta map[string]any) string {
		m := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern", "version": "1"},
		}
		maps.Copy(m, meta)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": tool, "arguments": args, "_meta": m,
		}})
		req, _ := http.NewRequest(http.MethodPost, f.url+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("%s: %d, session %q: %s", tool, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), data)
		}
		return string(data)
	}
	got := send("planning_setup_plan", map[string]any{"objective": "modern"}, nil)
	handle := regexp.MustCompile(`"session":"(s_[A-Z2-7]{26})"`).FindStringSubmatch(got)
	if !strings.Contains(got, "Objective: modern") || handle == nil {
		t.Fatalf("setup: %s", got)
	}
	if got := send("planning_read_plan", map[string]any{}, nil); !strings.Contains(got, "No session to read") {
		t.Errorf("a read without a handle: %s", got)
	}
	if got := send("planning_read_plan", map[string]any{"session": handle[1]}, nil); !strings.Contains(got, "Objective: modern") {
		t.Errorf("a read by the argument: %s", got)
	}
	if got := send("planning_read_plan", map[string]any{}, map[string]any{"io.github.wink-mcp/session": handle[1]}); !strings.Contains(got, "Objective: modern") {
		t.Errorf("a read by _meta: %s", got)
	}
	if n := f.srv.Sessions().Len(); n != 1 {
		t.Errorf("%d server sessions, want 1", n)
	}
	if n := f.ht.sessionCount(); n != 0 {
		t.Errorf("%d transport sessions left", n)
	}
}
