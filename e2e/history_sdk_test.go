package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKDryRunAndUndo: the official Go SDK's default client (2026-07-28,
// over HTTP, by handle) sends a dry run in _meta and reads the diff in the
// result's _meta, with the disk workspace untouched; then it undoes two
// real calls, and the file and the plan are back.
func TestGoSDKDryRunAndUndo(t *testing.T) {
	ws, args := diskWorkspace(t, map[string]string{"notes.md": "hello\n"})
	s := serveHTTP(t, args...)
	c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "")
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)
	mustCall(t, c, h, "read_file", map[string]any{"file_path": "notes.md"})
	plan, tree := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(), treeHash(t, ws)

	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{
		Meta:      mcp.Meta{"io.github.wink-mcp/dryRun": true},
		Name:      "edit_file",
		Arguments: with(h, map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := res.Content[0].(*mcp.TextContent)
	diff, _ := res.Meta["io.github.wink-mcp/dryRun"].(map[string]any)
	if res.IsError || text == nil || !strings.HasPrefix(text.Text, "Dry run: nothing was changed.") || diff == nil || !strings.Contains(diff["files"].([]any)[0].(map[string]any)["diff"].(string), "-hello\n+bye\n") {
		t.Fatalf("dry run: %+v", res)
	}
	if treeHash(t, ws) != tree {
		t.Fatal("the dry run changed the workspace")
	}

	mustCall(t, c, h, "edit_file", map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"})
	mustCall(t, c, h, "planning_add_step", map[string]any{"steps": []string{"review"}})
	if r := mustCall(t, c, h, "session_undo", map[string]any{"steps": 2}); !strings.Contains(r.text(), "file put back: notes.md") {
		t.Errorf("undo: %s", r.text())
	}
	if got := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(); got != plan {
		t.Errorf("the plan after the undo: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.md")); string(b) != "hello\n" || treeHash(t, ws) != tree {
		t.Errorf("notes.md after the undo: %q", b)
	}
}
