package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUndoByDefault: a server started without a configuration lists
// session_undo, and undoing a write_file puts the file back: in memory,
// where the write made a new file, and on disk, where it replaced one.
// A configuration whose sections leave history out turns undo off.
func TestUndoByDefault(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		c := &stdioClient{p: start(t, "")}
		c.p.initialize()
		listsUndo(t, c.p, true)
		if r := c.call(t, "write_file", map[string]any{"file_path": "notes.md", "content": "draft\n"}); r.IsError {
			t.Fatalf("write_file: %+v", r)
		}
		if r := c.call(t, "session_undo", map[string]any{}); r.IsError || !strings.Contains(r.text(), "undone: write_file") {
			t.Fatalf("session_undo: %+v", r)
		}
		if r := c.call(t, "read_file", map[string]any{"file_path": "notes.md"}); !r.IsError {
			t.Errorf("notes.md after the undo of the write that made it: %+v", r)
		}
	})
	t.Run("disk", func(t *testing.T) {
		ws := t.TempDir()
		file := filepath.Join(ws, "notes.md")
		if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c := &stdioClient{p: start(t, "", "--workspace", ws, "--state-dir", t.TempDir())}
		c.p.initialize()
		if r := c.call(t, "read_file", map[string]any{"file_path": "notes.md"}); r.IsError {
			t.Fatalf("read_file: %+v", r)
		}
		if r := c.call(t, "write_file", map[string]any{"file_path": "notes.md", "content": "after\n", "overwrite": true}); r.IsError {
			t.Fatalf("write_file: %+v", r)
		}
		if r := c.call(t, "session_undo", map[string]any{}); r.IsError || !strings.Contains(r.text(), "file put back: notes.md") {
			t.Fatalf("session_undo: %+v", r)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "before\n" {
			t.Errorf("notes.md after the undo holds %q (%v), want %q", b, err, "before\n")
		}
	})
	t.Run("off", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "wink.yaml")
		if err := os.WriteFile(cfg, []byte("sections: [planning, workspace]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := start(t, "", "--config", cfg)
		p.initialize()
		listsUndo(t, p, false)
	})
}

// listsUndo checks whether tools/list of p names session_undo.
func listsUndo(t *testing.T, p *proc, want bool) {
	t.Helper()
	f := p.call(500, "tools/list", map[string]any{})
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil {
		t.Fatal(err)
	}
	got := false
	for _, tl := range res.Tools {
		got = got || tl.Name == "session_undo"
	}
	if got != want {
		t.Errorf("tools/list names session_undo: %v, want %v", got, want)
	}
}
