package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStatelessEraRequestsKeepNoState sends requests of the 2026-07-28 era,
// which mcp-go serves per request: they work, carry no session, and leave
// no state behind, so that one such client never sees another's plan.
func TestStatelessEraRequestsKeepNoState(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	send := func(tool string, args map[string]any) string {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": tool, "arguments": args,
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern", "version": "1"},
			},
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
	if got := send("planning_setup_plan", map[string]any{"objective": "modern"}); !strings.Contains(got, "Objective: modern") {
		t.Fatalf("setup: %s", got)
	}
	if got := send("planning_read_plan", map[string]any{}); strings.Contains(got, "modern") || !strings.Contains(got, "No plan") {
		t.Errorf("a later stateless request sees state: %s", got)
	}
	if n := f.srv.Sessions().Len(); n != 0 {
		t.Errorf("%d server sessions left", n)
	}
	if n := f.ht.sessionCount(); n != 0 {
		t.Errorf("%d transport sessions left", n)
	}
}
