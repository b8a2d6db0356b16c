package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/wink-mcp/wink-mcp/diffs"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/history"
	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// historyHarness is a server with the probe section, a memory workspace
// and the history section, keeping retention commits per session.
func historyHarness(t *testing.T, retention int) (*harness, *mcptest.Client) {
	t.Helper()
	b, err := workspace.NewMemory(map[string][]byte{"a.txt": []byte("a\n")})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := sections.NewTree(probeSection(), workspace.New(b, workspace.Options{NoReadBeforeWrite: true}), history.New())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, History: retention,
		Policies: []policy.Policy{failingPolicy{}},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := &harness{t: t, srv: srv}
	return h, h.client("c")
}

// TestDryRun: a dry run runs the call, its policies' OnResult included,
// and always restores it; a successful one says so and carries the diff
// of the state and the files, as a text block and in _meta.
func TestDryRun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		dry        any
		isError    bool
		said       string   // the first text block starts so
		diff       []string // the diff block holds these
		count      int      // the count after
		added      bool     // the count was 1 before
		files      string   // the _meta's files, "path status" joined by ", "
	}{
		{
			name: "state", tool: "probe_add", args: map[string]any{"by": 5}, dry: true,
			said: "Dry run: nothing was changed. Added 5.",
			diff: []string{"The call would make these changes:\n\nState probe.count:\n--- probe.count\n+++ probe.count\n@@ -0,0 +1 @@\n+5\n"},
		},
		{
			name: "file", tool: "write_file", args: map[string]any{"file_path": "a.txt", "content": "b\n", "overwrite": true}, dry: true,
			said:  "Dry run: nothing was changed. Overwrote a.txt",
			diff:  []string{"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"},
			files: "a.txt modified",
		},
		{
			name: "read only", tool: "probe_get", args: map[string]any{}, dry: true, added: true, count: 1,
			said: "Dry run: nothing was changed. Count.",
			diff: []string{"The call would change nothing."},
		},
		{name: "failure", tool: "probe_fail", args: map[string]any{"by": 5}, dry: true, isError: true, said: "Nothing doing."},
		{name: "OnResult refuses", tool: "probe_add", args: map[string]any{"by": -13}, dry: true, isError: true, said: "Tool 'probe_add' failed: unlucky"},
		{name: "not a boolean", tool: "probe_add", args: map[string]any{"by": 5}, dry: 1, isError: true, said: "Invalid _meta: io.github.wink-mcp/dryRun: expected true or false, got 1"},
		{name: "false", tool: "probe_add", args: map[string]any{"by": 5}, dry: false, said: "Added 5.", count: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c := historyHarness(t, 0)
			if tc.added {
				c.Call(ctx, "probe_add", map[string]any{"by": 1}, nil)
			}
			r := c.Call(ctx, tc.tool, tc.args, map[string]any{tools.MetaDryRun: tc.dry})
			if r.IsError != tc.isError || len(r.Content) == 0 || !strings.HasPrefix(r.Content[0].Text, tc.said) {
				t.Fatalf("result: %+v", r)
			}
			_, isDry := r.Meta[tools.MetaDryRun]
			if wantDry := tc.diff != nil; isDry != wantDry || len(r.Content) != map[bool]int{true: 2, false: 1}[wantDry] {
				t.Errorf("dry-run _meta %v, %d blocks: %+v", isDry, len(r.Content), r)
			}
			for _, d := range tc.diff {
				if !strings.Contains(r.Content[1].Text, d) {
					t.Errorf("the diff block %q lacks %q", r.Content[1].Text, d)
				}
			}
			if tc.diff != nil {
				b, _ := json.Marshal(r.Meta[tools.MetaDryRun])
				var d diffs.Diff
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatal(err)
				}
				var files []string
				for _, f := range d.Files {
					files = append(files, f.Path+" "+f.Status)
				}
				if got := strings.Join(files, ", "); got != tc.files {
					t.Errorf("_meta files %q, want %q", got, tc.files)
				}
			}
			if got := h.count(c); got != tc.count {
				t.Errorf("count %d, want %d", got, tc.count)
			}
			if got := c.Call(ctx, "read_file", map[string]any{"file_path": "a.txt"}, nil).Text(); !strings.Contains(got, "1 | a") {
				t.Errorf("a.txt after: %s", got)
			}
		})
	}
}

// historyOf reads the session's history resource.
func historyOf(t *testing.T, c *mcptest.Client) (commits []string, checkpoints []string) {
	t.Helper()
	var v struct {
		Commits []struct {
			Tool   string
			State  []string
			Files  []string
			Undone bool
		}
		Checkpoints []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(readText(t, c, history.URI, nil)), &v); err != nil {
		t.Fatal(err)
	}
	for _, cm := range v.Commits {
		line := cm.Tool + " " + strings.Join(append(cm.State, cm.Files...), ",")
		if cm.Undone {
			line += " undone"
		}
		commits = append(commits, line)
	}
	for _, cp := range v.Checkpoints {
		checkpoints = append(checkpoints, cp.Name)
	}
	return commits, checkpoints
}

// TestUndoAndRestore: undo and restore put back the state and the memory
// workspace from the stored roots; the history lists what each call
// changed; retention bounds it; without a history the tools say so.
func TestUndoAndRestore(t *testing.T) {
	ctx := context.Background()
	h, c := historyHarness(t, 6)
	call := func(tool string, args map[string]any) string {
		t.Helper()
		r := c.Call(ctx, tool, args, nil)
		if r.IsError {
			t.Fatalf("%s: %s", tool, r.Text())
		}
		return r.Said()
	}
	file := func() string {
		return c.Call(ctx, "read_file", map[string]any{"file_path": "a.txt"}, nil).Text()
	}
	call("probe_add", map[string]any{"by": 1})
	call("write_file", map[string]any{"file_path": "a.txt", "content": "two\n", "overwrite": true})
	call("session_checkpoint", map[string]any{"name": "two"})
	call("probe_add", map[string]any{"by": 2})
	call("write_file", map[string]any{"file_path": "b.txt", "content": "b\n"})
	call("probe_get", map[string]any{}) // read-only: not in the history

	commits, cps := historyOf(t, c)
	if want := []string{"write_file a.txt", "probe_add probe.count", "write_file b.txt"}; !slices.Equal(commits[len(commits)-3:], want) || !slices.Equal(cps, []string{"two"}) {
		t.Errorf("history %q, checkpoints %q", commits, cps)
	}

	if got := call("session_undo", map[string]any{}); got != "Undid 1 call.\n\nundone: write_file (call "+strings.Split(got, "(call ")[1] {
		t.Errorf("undo: %q", got)
	}
	if r := c.Call(ctx, "read_file", map[string]any{"file_path": "b.txt"}, nil); !r.IsError {
		t.Errorf("b.txt after the undo: %s", r.Text())
	}
	if h.count(c) != 3 {
		t.Errorf("count %d after the undo, want 3", h.count(c))
	}
	call("session_restore", map[string]any{"name": "two"})
	if h.count(c) != 1 || !strings.Contains(file(), "1 | two") {
		t.Errorf("after the restore: count %d, %s", h.count(c), file())
	}
	call("session_undo", map[string]any{}) // the write of a.txt
	if !strings.Contains(file(), "1 | a") {
		t.Errorf("a.txt after the second undo: %s", file())
	}
	// The history keeps 6 commits (the undos and the restore among
	// them): the first probe_add is gone.
	r := c.Call(ctx, "session_undo", map[string]any{}, nil)
	if !r.IsError || r.Text() != "Only 0 calls can be undone (the history keeps the last 6 changes). Nothing was changed." {
		t.Errorf("undo beyond the history: %+v", r)
	}
	if commits, _ := historyOf(t, c); len(commits) != 6 || commits[0] != "write_file a.txt undone" {
		t.Errorf("the history keeps %q", commits)
	}
	if r := c.Call(ctx, "session_restore", map[string]any{"name": "one"}, nil); !r.IsError || r.Text() != "No checkpoint 'one'. Checkpoints: 'two'." {
		t.Errorf("restore of an unknown checkpoint: %+v", r)
	}

	_, c = historyHarness(t, 0)
	for tool, args := range map[string]map[string]any{"session_undo": {}, "session_checkpoint": {"name": "x"}, "session_restore": {"name": "x"}} {
		if r := c.Call(ctx, tool, args, nil); !r.IsError || r.Text() != "This server keeps no history of its sessions (history.retention is 0)." {
			t.Errorf("%s without a history: %+v", tool, r)
		}
	}
}

// TestDryRunChangesNoSession: a dry run of a call that would change a
// session's state leaves the session as it was in the store too.
func TestDryRunChangesNoSession(t *testing.T) {
	ctx := context.Background()
	h, c := historyHarness(t, 5)
	c.Call(ctx, "probe_add", map[string]any{"by": 1}, nil)
	c.Call(ctx, "probe_add", map[string]any{"by": 1}, map[string]any{tools.MetaDryRun: true})
	if commits, _ := historyOf(t, c); len(commits) != 1 {
		t.Errorf("history after a dry run: %q", commits)
	}
	if n, _ := session.Get(h.session(c), count); n != 1 {
		t.Errorf("count %d", n)
	}
}

// TestDryRunStartsNoSession: a 2026-07-28 client's dry run without a
// handle, which would start a session, leaves none: its result names no
// session and the server holds none.
func TestDryRunStartsNoSession(t *testing.T) {
	srv, _ := newHandleServer(t)
	c := mcptest.NewClient(t, srv.MCP(), "") // never registered: no connection
	r := c.Call(context.Background(), "probe_add", map[string]any{"by": 2}, modern(map[string]any{tools.MetaDryRun: true}))
	if r.IsError || r.Session() != "" || !strings.HasPrefix(r.Text(), "Dry run: nothing was changed. Added 2.") {
		t.Errorf("dry run: %+v", r)
	}
	if n := srv.Sessions().Len(); n != 0 {
		t.Errorf("%d sessions after a dry run", n)
	}
}

// newDiskHistoryServer returns a server of the probe section, a disk
// workspace without read before write and the history section keeping
// retention commits, and the workspace's directory.
func newDiskHistoryServer(t *testing.T, retention int) (*server.Server, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := workspace.OpenDisk(dir, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	tree, err := sections.NewTree(probeSection(), workspace.New(b, workspace.Options{NoReadBeforeWrite: true}), history.New())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, History: retention, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, dir
}

// TestRestoreRefusedPastRetention: a checkpoint older than the commits the
// history keeps cannot be restored once a commit dropped from it changed
// files on disk: those files could not be put back.
func TestRestoreRefusedPastRetention(t *testing.T) {
	ctx := context.Background()
	srv, dir := newDiskHistoryServer(t, 2)
	c := mcptest.NewClient(t, srv.MCP(), "c")
	for _, step := range []struct {
		tool string
		args map[string]any
	}{
		{"session_checkpoint", map[string]any{"name": "start"}},
		{"write_file", map[string]any{"file_path": "a.txt", "content": "1\n"}},
		{"probe_add", map[string]any{"by": 1}},
		{"probe_add", map[string]any{"by": 1}},
	} {
		if r := c.Call(ctx, step.tool, step.args, nil); r.IsError {
			t.Fatalf("%s: %s", step.tool, r.Text())
		}
	}
	r := c.Call(ctx, "session_restore", map[string]any{"name": "start"}, nil)
	if !r.IsError || r.Text() != "The history no longer holds every call since then (it keeps the last 2), so their files cannot be put back. Nothing was changed." {
		t.Errorf("restore: %+v", r)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(data) != "1\n" {
		t.Errorf("a.txt: %q, %v", data, err)
	}
	// The calls the history keeps can still be undone.
	if r := c.Call(ctx, "session_undo", map[string]any{"steps": 2}, nil); r.IsError {
		t.Errorf("undo: %+v", r)
	}
}

// TestUndoLargeFileOnDisk: a file larger than a blob's chunk, kept in the
// history in chunks, is put back whole, after more commits than start a
// sweep of the session's blobs.
func TestUndoLargeFileOnDisk(t *testing.T) {
	ctx := context.Background()
	srv, dir := newDiskHistoryServer(t, 40)
	c := mcptest.NewClient(t, srv.MCP(), "c")
	big := func(n int) string { return strings.Repeat(fmt.Sprintf("line %d of a large file\n", n), 30000) } // about 750 KB
	write := func(n int) {
		t.Helper()
		if r := c.Call(ctx, "write_file", map[string]any{"file_path": "big.txt", "content": big(n), "overwrite": true}, nil); r.IsError {
			t.Fatalf("write %d: %s", n, r.Text())
		}
	}
	// Enough commits for a sweep of the session's blobs.
	for n := range 40 {
		write(n)
	}
	if r := c.Call(ctx, "session_undo", map[string]any{"steps": 39}, nil); r.IsError {
		t.Fatalf("undo: %s", r.Text())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "big.txt")); err != nil || string(data) != big(0) {
		t.Errorf("big.txt after the undo: %d bytes, %v", len(data), err)
	}
}
