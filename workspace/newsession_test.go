package workspace

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sessions"
)

// TestMissingFileInNewSession: a call of a 2026-07-28 client that names no
// session runs in a new one. In a memory workspace that session's
// workspace is empty, so a file the call needs and does not find may be
// in the session the client forgot to name: the error says so. On disk the
// files are the same in every session, and it does not. In both, a write
// the read-before-write policy denies, for want of a read the session
// does not remember, says so.
func TestMissingFileInNewSession(t *testing.T) {
	modern := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	tests := []struct{ tool, args, said string }{
		{"edit_file", `{"file_path":"a.txt","old_string":"a","new_string":"b"}`, "File does not exist: a.txt"},
		{"rm", `{"path":"a.txt"}`, "No such file or directory: a.txt"},
		{"move_file", `{"source":"a.txt","destination":"b.txt"}`, "No such file or directory: a.txt"},
		{"apply_edits", `{"edits":[{"op":"edit","file_path":"a.txt","old_string":"a","new_string":"b"}]}`, "edits[0] (edit a.txt) failed: File does not exist: a.txt No edit was applied."},
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"b.txt": "b"})
		c := mcptest.NewClient(t, h.srv.MCP(), "") // no connection
		for _, tt := range tests {
			r := c.Call(context.Background(), tt.tool, json.RawMessage(tt.args), modern)
			want := tt.said
			if bk.name == "memory" {
				want = strings.TrimSuffix(tt.said, ".") + ". " + sessions.NewSessionMessage("a.txt in its workspace")
			}
			if !r.IsError || r.Text() != want {
				t.Errorf("%s:\n got %q\nwant %q", tt.tool, r.Text(), want)
			}
		}
		r := c.Call(context.Background(), "write_file", json.RawMessage(`{"file_path":"b.txt","content":"c","overwrite":true}`), modern)
		want := "File 'b.txt' must be read before overwriting. " + sessions.NewSessionMessage("record of reading b.txt")
		if !r.IsError || r.Text() != want {
			t.Errorf("write_file:\n got %q\nwant %q", r.Text(), want)
		}
	})
}
