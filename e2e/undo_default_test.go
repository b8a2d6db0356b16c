package e2e

import (
	"encoding/json"
	"fmt"
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

// TestUndoPastTheTail: over stdio with --session, 25 plan calls, more than
// the 20 the history keeps (its tail drops its oldest record at each
// call once full, writing no blob), then kill -9: the process started
// again undoes the last 20 of them, back to the plan of the fifth call,
// and refuses a 21st, which the history no longer holds.
func TestUndoPastTheTail(t *testing.T) {
	args := []string{"--session", "desk", "--state-dir", t.TempDir(), "--store", "embedded"}
	p := start(t, "", args...)
	p.initialize()
	c := &stdioClient{p: p}
	for i := range 25 {
		if r := c.call(t, "planning_setup_plan", map[string]any{"objective": fmt.Sprint("objective ", i), "initial_steps": []string{"a"}}); r.IsError {
			t.Fatalf("planning_setup_plan %d: %+v", i, r)
		}
	}
	p.kill()

	p = start(t, "", args...)
	p.initialize()
	c = &stdioClient{p: p}
	if r := c.call(t, "session_undo", map[string]any{"steps": 20}); r.IsError || strings.Count(r.text(), "planning_setup_plan") == 0 {
		t.Fatalf("session_undo of 20 calls: %+v", r)
	}
	if r := c.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "Objective: objective 4\n") {
		t.Errorf("the plan after undoing 20 of 25 calls: %+v, want that of call 4", r)
	}
	if r := c.call(t, "session_undo", map[string]any{}); !r.IsError || !strings.HasPrefix(r.text(), "Only 0 calls can be undone") {
		t.Errorf("an undo past the history's 20 calls: %+v, want it refused", r)
	}
}
