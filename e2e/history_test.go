package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Dry runs, undo and checkpoints over the built binary, on a disk
// workspace: a dry run leaves every byte of the tree as it was and shows
// its diff; undo and restore put the plan and the files back exactly, by
// handle and across a restart; an undo over a file changed outside the
// server is refused and changes nothing.

// historyConfig turns the history section on.
const historyConfig = "sections: [planning, workspace, history]\nhistory:\n  retention: 20\n"

// diskWorkspace returns a workspace directory holding files, a state
// directory and the flags that serve them with the history section on.
func diskWorkspace(t *testing.T, files map[string]string) (ws string, args []string) {
	t.Helper()
	ws, state := t.TempDir(), t.TempDir()
	for p, content := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(cfg, []byte(historyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, []string{"--config", cfg, "--workspace", ws, "--state-dir", state}
}

// treeHash hashes every entry under dir: its path, kind, mode and content.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d\x00%s", len(b), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// dryRunResult is a dry run's result: the tool's, and the diff in _meta.
type dryRunResult struct {
	result
	Meta struct {
		DryRun struct {
			State []struct{ Slice, Diff string } `json:"state"`
			Files []struct{ Path, Status, Diff string }
		} `json:"io.github.wink-mcp/dryRun"`
	} `json:"_meta"`
}

// TestDryRunOnDisk: a dry run of apply_edits over stdio, with raw frames,
// leaves every byte of a disk workspace as it was, says so, and shows
// what it would have changed as a unified diff, in a text block and in
// _meta; a dry run of a plan change shows the plan's diff and leaves the
// plan as it was; a dryRun that is not a boolean is refused.
func TestDryRunOnDisk(t *testing.T) {
	ws, args := diskWorkspace(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "dir/b.txt": "bee\n"})
	p := start(t, "", args...)
	p.initialize()
	c := &stdioClient{p: p}
	if r := c.call(t, "read_file", map[string]any{"file_path": "a.txt"}); r.IsError {
		t.Fatalf("read_file: %+v", r)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}); r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	before := treeHash(t, ws)

	dry := func(id int, tool string, args map[string]any, meta any) dryRunResult {
		t.Helper()
		f := p.call(id, "tools/call", map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{"io.github.wink-mcp/dryRun": meta}})
		var r dryRunResult
		if f.Error != nil || json.Unmarshal(f.Result, &r) != nil {
			t.Fatalf("%s: %s %+v", tool, f.Result, f.Error)
		}
		return r
	}
	r := dry(100, "apply_edits", map[string]any{"edits": []map[string]any{
		{"op": "edit", "file_path": "a.txt", "old_string": "two", "new_string": "2"},
		{"op": "write", "file_path": "new/c.txt", "content": "sea\n"},
		{"op": "rm", "path": "dir/b.txt"},
	}}, true)
	if r.IsError || !strings.HasPrefix(r.text(), "Dry run: nothing was changed. Applied 3 edits") {
		t.Fatalf("dry run: %+v", r)
	}
	if len(r.Content) != 2 || !strings.Contains(r.Content[1].Text, "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n") ||
		!strings.Contains(r.Content[1].Text, "--- /dev/null\n+++ b/new/c.txt\n@@ -0,0 +1 @@\n+sea\n") ||
		!strings.Contains(r.Content[1].Text, "--- a/dir/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bee\n") {
		t.Errorf("the diff block: %+v", r.Content)
	}
	var got []string
	for _, f := range r.Meta.DryRun.Files {
		got = append(got, f.Path+" "+f.Status)
	}
	if want := []string{"a.txt modified", "dir/b.txt removed", "new/c.txt added"}; !slices.Equal(got, want) || len(r.Meta.DryRun.State) != 0 {
		t.Errorf("_meta: files %v, want %v; state %+v", got, want, r.Meta.DryRun.State)
	}
	if after := treeHash(t, ws); after != before {
		t.Error("the dry run changed the workspace")
	}

	r = dry(101, "planning_add_step", map[string]any{"steps": []string{"review"}}, true)
	if r.IsError || len(r.Meta.DryRun.State) != 1 || r.Meta.DryRun.State[0].Slice != "planning.plan" || !strings.Contains(r.Meta.DryRun.State[0].Diff, " 1 [pending] draft\n+2 [pending] review\n") {
		t.Errorf("dry run of a plan change: %+v", r)
	}
	if plan := c.call(t, "planning_read_plan", map[string]any{}); strings.Contains(plan.text(), "review") {
		t.Errorf("the plan after a dry run: %s", plan.text())
	}
	if r := dry(102, "planning_add_step", map[string]any{"steps": []string{"review"}}, "yes"); !r.IsError || r.text() != `Invalid _meta: io.github.wink-mcp/dryRun: expected true or false, got "yes"` {
		t.Errorf("a dryRun that is not a boolean: %+v", r)
	}
	// The real call does what the dry run showed.
	if r := c.call(t, "apply_edits", map[string]any{"edits": []map[string]any{{"op": "edit", "file_path": "a.txt", "old_string": "two", "new_string": "2"}}}); r.IsError {
		t.Fatalf("apply_edits: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\n2\nthree\n" {
		t.Errorf("a.txt after the call: %q", b)
	}
}

// historyView is the resource wink://session/history.
type historyView struct {
	Retention int
	Commits   []struct {
		Tool     string
		CallID   string `json:"call_id"`
		State    []string
		Files    []string
		Undone   bool
		Restores bool
	}
	Checkpoints []struct{ Name string }
}

// readHistory reads wink://session/history of session h.
func readHistory(t *testing.T, c *httpClient, h string) historyView {
	t.Helper()
	meta := modernMeta()
	meta["io.github.wink-mcp/session"] = h
	var res struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	_ = json.Unmarshal(c.post(t, "resources/read", "wink://session/history", map[string]any{"uri": "wink://session/history", "_meta": meta}), &res)
	var v historyView
	if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &v) != nil {
		t.Fatalf("wink://session/history: %+v", res)
	}
	return v
}

// mustCall calls tool with the handle h and fails the test on an error result.
func mustCall(t *testing.T, c caller, h, tool string, args map[string]any) result {
	t.Helper()
	r := c.call(t, tool, with(h, args))
	if r.IsError {
		t.Fatalf("%s: %+v", tool, r)
	}
	return r
}

// TestUndoThreeCallsOverHTTP: a 2026-07-28 client, by handle, makes four
// calls that change its plan and the files of a disk workspace; undoing
// the last three puts back the plan and every byte of the tree as they
// were after the first; the history lists each call with what it changed,
// and the undone ones as such; the undo itself is not undone by the next.
func TestUndoThreeCallsOverHTTP(t *testing.T) {
	ws, args := diskWorkspace(t, map[string]string{"notes.md": "hello\n"})
	s := serveHTTP(t, args...)
	c := &httpClient{url: s.url}
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)
	plan, tree := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(), treeHash(t, ws)

	mustCall(t, c, h, "read_file", map[string]any{"file_path": "notes.md"})
	mustCall(t, c, h, "edit_file", map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"})
	mustCall(t, c, h, "apply_edits", map[string]any{"edits": []map[string]any{
		{"op": "write", "file_path": "src/new.go", "content": "package src\n"},
		{"op": "rm", "path": "notes.md"},
	}})
	mustCall(t, c, h, "planning_update_step", map[string]any{"step_id": 1, "status": "done"})
	if treeHash(t, ws) == tree {
		t.Fatal("the calls changed no file")
	}

	r := mustCall(t, c, h, "session_undo", map[string]any{"steps": 3})
	if want := "Undid 3 calls.\n\nundone: planning_update_step"; !strings.HasPrefix(r.text(), want) || !strings.Contains(r.text(), "file put back: notes.md\nfile put back: src/\nfile put back: src/new.go") {
		t.Errorf("undo: %s", r.text())
	}
	if got := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(); got != plan {
		t.Errorf("the plan after the undo:\n%s\nwant\n%s", got, plan)
	}
	if treeHash(t, ws) != tree {
		t.Error("the tree after the undo is not as it was after the first call")
	}
	if _, err := os.Stat(filepath.Join(ws, "src")); err == nil {
		t.Error("src/ is still there")
	}

	v := readHistory(t, c, h)
	var lines []string
	for _, cm := range v.Commits {
		lines = append(lines, fmt.Sprintf("%s state=%v files=%v undone=%v restores=%v", cm.Tool, cm.State, cm.Files, cm.Undone, cm.Restores))
	}
	want := []string{
		"planning_setup_plan state=[planning.plan] files=[] undone=false restores=false",
		"edit_file state=[] files=[notes.md] undone=true restores=false",
		"apply_edits state=[] files=[notes.md src/ src/new.go] undone=true restores=false",
		"planning_update_step state=[planning.plan] files=[] undone=true restores=false",
		"session_undo state=[planning.plan] files=[notes.md src/ src/new.go] undone=false restores=true",
	}
	if v.Retention != 20 || !slices.Equal(lines, want) {
		t.Errorf("history:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// The next undo undoes the first call, not the undo.
	mustCall(t, c, h, "session_undo", map[string]any{})
	if r := c.call(t, "planning_read_plan", with(h, map[string]any{})); !r.IsError {
		t.Errorf("the plan after undoing its setup: %+v", r)
	}
	if r := c.call(t, "session_undo", with(h, map[string]any{})); !r.IsError || !strings.HasPrefix(r.text(), "Only 0 calls can be undone") {
		t.Errorf("undo with nothing left: %+v", r)
	}
}

// TestCheckpointAcrossRestart: a checkpoint saved by handle is restored by
// the next process on the same state directory, plan and files alike.
func TestCheckpointAcrossRestart(t *testing.T) {
	ws, args := diskWorkspace(t, map[string]string{"notes.md": "hello\n"})
	args = append(args, "--store", "embedded")
	s := serveHTTP(t, args...)
	c := &httpClient{url: s.url}
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)
	mustCall(t, c, h, "read_file", map[string]any{"file_path": "notes.md"})
	mustCall(t, c, h, "session_checkpoint", map[string]any{"name": "before"})
	plan, tree := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(), treeHash(t, ws)
	mustCall(t, c, h, "write_file", map[string]any{"file_path": "notes.md", "content": "changed\n", "overwrite": true})
	mustCall(t, c, h, "planning_add_step", map[string]any{"steps": []string{"review"}})
	s.p.kill()

	s = serveHTTP(t, args...)
	c = &httpClient{url: s.url}
	r := mustCall(t, c, h, "session_restore", map[string]any{"name": "before"})
	if !strings.HasPrefix(r.text(), "Restored checkpoint 'before'.") || !strings.Contains(r.text(), "file put back: notes.md") {
		t.Errorf("restore: %s", r.text())
	}
	if got := mustCall(t, c, h, "planning_read_plan", map[string]any{}).text(); got != plan {
		t.Errorf("the plan after the restore:\n%s\nwant\n%s", got, plan)
	}
	if treeHash(t, ws) != tree {
		t.Error("the tree after the restore is not as it was at the checkpoint")
	}
	if v := readHistory(t, c, h); len(v.Checkpoints) != 1 || v.Checkpoints[0].Name != "before" {
		t.Errorf("checkpoints: %+v", v.Checkpoints)
	}
	if r := c.call(t, "session_restore", with(h, map[string]any{"name": "nope"})); !r.IsError || r.text() != "No checkpoint 'nope'. Checkpoints: 'before'." {
		t.Errorf("an unknown checkpoint: %+v", r)
	}
}

// TestUndoRefusedAfterOutsideChange: over stdio, an undo over a file that
// another program changed since the server wrote it is refused, naming
// the file, and changes nothing: neither the file nor the plan.
func TestUndoRefusedAfterOutsideChange(t *testing.T) {
	ws, args := diskWorkspace(t, map[string]string{"keep.md": "keep\n"})
	p := start(t, "", args...)
	p.initialize()
	c := &stdioClient{p: p}
	for _, step := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"file_path": "x.md", "content": "server\n"}},
		{"write_file", map[string]any{"file_path": "y.md", "content": "server\n"}},
		{"planning_setup_plan", map[string]any{"objective": "Ship it"}},
	} {
		if r := c.call(t, step.tool, step.args); r.IsError {
			t.Fatalf("%s: %+v", step.tool, r)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "x.md"), []byte("someone else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := treeHash(t, ws)
	r := c.call(t, "session_undo", map[string]any{"steps": 3})
	if !r.IsError || r.text() != "Cannot go back: these files were changed outside the server since the server last wrote them: x.md. Nothing was changed; put them back as the server left them, or keep working from here." {
		t.Errorf("undo: %+v", r)
	}
	if treeHash(t, ws) != tree {
		t.Error("the refused undo changed the tree")
	}
	if r := c.call(t, "planning_read_plan", map[string]any{}); r.IsError {
		t.Errorf("the plan after the refused undo: %+v", r)
	}
	// Undoing the calls after the file's is allowed.
	if r := c.call(t, "session_undo", map[string]any{"steps": 2}); r.IsError || !strings.Contains(r.text(), "file put back: y.md") {
		t.Errorf("undo of the last two: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "y.md")); err == nil {
		t.Error("y.md is still there")
	}
}
