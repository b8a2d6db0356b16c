package workspace

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
)

var quiet = slog.New(slog.DiscardHandler)

// TestGuidance pins the section's rendered guidance, with its examples, for
// each backend and with the policy off.
func TestGuidance(t *testing.T) {
	for _, c := range []struct {
		name string
		kind backendKind
		opts Options
	}{
		{"memory", backends[0], Options{}},
		{"disk", backends[1], Options{}},
		{"no_read_before_write", backends[0], Options{NoReadBeforeWrite: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := c.kind.open(t, nil)
			tree, err := sections.NewTree(New(b, c.opts))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "guidance_"+c.name, tree.Guidance())
		})
	}
}

// TestContainedOnlyInMemory: the memory backend keeps the workspace in
// the session's state, so a call may be run again after its commit lost
// to another writer's; the disk backend writes files outside it, so none
// is.
func TestContainedOnlyInMemory(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		b, _ := bk.open(t, nil)
		if got, want := New(b, Options{}).Contained, b.Kind() == "memory"; got != want {
			t.Errorf("Contained = %v, want %v", got, want)
		}
	})
}

// TestToolsList pins the advertised tools: names in order, annotations and
// schemas.
func TestToolsList(t *testing.T) {
	h := newHarness(t, backends[0], nil)
	raw, rpcErr := h.cs.Send(context.Background(), "tools/list", map[string]any{})
	if rpcErr != nil {
		t.Fatal(rpcErr.Message)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	golden(t, "tools_list", string(b))
	var list struct {
		Tools []struct {
			Name        string
			Annotations map[string]any
		}
	}
	_ = json.Unmarshal(raw, &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		ro, destructive := tl.Annotations["readOnlyHint"].(bool), tl.Annotations["destructiveHint"].(bool)
		wantRO := slices.Contains([]string{"ls", "directory_tree", "file_info", "read_file", "read_multiple_files", "glob", "grep"}, tl.Name)
		wantDestructive := slices.Contains([]string{"rm", "move_file", "apply_edits"}, tl.Name)
		if ro != wantRO || destructive != wantDestructive || tl.Annotations["openWorldHint"] != false {
			t.Errorf("%s: annotations %v", tl.Name, tl.Annotations)
		}
	}
	if got := strings.Join(names, " "); got != "ls directory_tree file_info read_file read_multiple_files write_file edit_file create_directory move_file glob grep rm apply_edits" {
		t.Errorf("tools = %s", got)
	}
}

// TestReadBeforeWriteOff: with the policy off, existing files may be
// changed unread.
func TestReadBeforeWriteOff(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"a.txt": "a"}, harnessOpts{opts: Options{NoReadBeforeWrite: true}})
		step{"edit_file", `{"file_path":"a.txt","old_string":"a","new_string":"b"}`, "Replaced 1 occurrence in a.txt.", false}.check(t, h)
		step{"write_file", `{"file_path":"a.txt","content":"c","overwrite":true}`, "Overwrote a.txt (1 byte).", false}.check(t, h)
	})
}

// TestApplyEditsPassesServerPolicies: each operation passes the
// server-wide policies of the tool it names, and what it does counts for
// them.
func TestApplyEditsPassesServerPolicies(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		dep := policy.NewSequentialDependency(map[string][]string{"rm": {"ls"}, "glob": {"write_file"}})
		h := newHarness(t, bk, map[string]string{"a.txt": "a"}, harnessOpts{policies: []policy.Policy{dep}})
		step{"apply_edits", `{"edits":[{"op":"write","file_path":"b.txt","content":"b"},{"op":"rm","path":"a.txt"}]}`,
			"edits[1] (rm a.txt) failed: Tool 'rm' requires: ls No edit was applied.", true}.check(t, h)
		step{"glob", `{"pattern":"*"}`, "Tool 'glob' requires: write_file", true}.check(t, h)
		step{"ls", `{}`, "Listed /: 1 entry.\n\na.txt (1 byte)", false}.check(t, h)
		step{"apply_edits", `{"edits":[{"op":"write","file_path":"b.txt","content":"b"},{"op":"rm","path":"a.txt"}]}`,
			"Applied 2 edits to 2 files.\n\nedits[0]: Created b.txt (1 byte).\nedits[1]: Removed file a.txt.", false}.check(t, h)
		// The write inside apply_edits counted as a write_file success.
		step{"glob", `{"pattern":"*"}`, "Found 1 file matching * under /.\n\nb.txt", false}.check(t, h)
	})
}

// TestApplyEditsDeadlineNamesTheOperation: an apply_edits that runs out of
// time fails with the deadline message and the operation it stopped at,
// and changes nothing.
func TestApplyEditsDeadlineNamesTheOperation(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, nil, harnessOpts{deadline: time.Hour})
		editHook = func(ctx *tools.Context, i int) error {
			if i == 2 {
				<-ctx.Done() // the deadline passes while operation 2 waits
			}
			return nil
		}
		defer func() { editHook = nil; current.Store(nil) }()
		r := h.cs.Call(context.Background(), "apply_edits",
			json.RawMessage(`{"edits":[{"op":"write","file_path":"a","content":"1"},{"op":"write","file_path":"b","content":"2"},{"op":"write","file_path":"c","content":"3"}]}`),
			map[string]any{"io.wink-mcp/timeoutMs": 100})
		want := "Tool 'apply_edits' exceeded its deadline (100ms). edits[2] (write c) failed: the call ran out of time before it. No edit was applied."
		if r.Text() != want || !r.IsError {
			t.Errorf("got (isError=%v) %q\nwant %q", r.IsError, r.Text(), want)
		}
		if d := h.dump(h.cs); d != "" {
			t.Errorf("the tree is not empty:\n%s", d)
		}
	})
}

// TestResources: the tree and each file are MCP resources.
func TestResources(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"docs/a b.md": "# A\n", "bin/x": "\x00"})
		h.mustCall("write_file", `{"file_path":"new.txt","content":"new"}`)
		read := func(uri string) (string, *mcp.JSONRPCErrorDetails) {
			raw, rpcErr := h.cs.Send(context.Background(), "resources/read", map[string]any{"uri": uri})
			if rpcErr != nil {
				return "", rpcErr
			}
			var r struct{ Contents []struct{ Text string } }
			_ = json.Unmarshal(raw, &r)
			return r.Contents[0].Text, nil
		}
		tree, err := read(TreeURI)
		want := bk.name + " workspace, 3 files.\n\nbin/x (1 byte) wink://workspace/files/bin/x\ndocs/a b.md (4 bytes) wink://workspace/files/docs/a b.md\nnew.txt (3 bytes) wink://workspace/files/new.txt\n"
		if err != nil || tree != want {
			t.Errorf("tree: %v\n got %q\nwant %q", err, tree, want)
		}
		if got, err := read("wink://workspace/files/docs/a%20b.md"); err != nil || got != "# A\n" {
			t.Errorf("file: %q, %v", got, err)
		}
		if got, err := read("wink://workspace/files/new.txt"); err != nil || got != "new" {
			t.Errorf("file: %q, %v", got, err)
		}
		for _, uri := range []string{"wink://workspace/files/missing", "wink://workspace/files/docs", "wink://workspace/files/bin/x"} {
			if _, err := read(uri); err == nil {
				t.Errorf("%s: no error", uri)
			}
		}
		raw, rpcErr := h.cs.Send(context.Background(), "resources/templates/list", map[string]any{})
		if rpcErr != nil || !strings.Contains(string(raw), FileURITemplate) {
			t.Errorf("templates: %s %v", raw, rpcErr)
		}
	})
}

// TestLargeOutputsAreCapped: glob and grep stop at the cap and say so.
func TestLargeOutputsAreCapped(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		files := map[string]string{}
		for i := range 5 {
			files[string(rune('a'+i))+".txt"] = "hit\nhit\n"
		}
		h := newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: 3}})
		step{"glob", `{"pattern":"*.txt"}`, "Found 5 files matching *.txt under /. Showing 3; more follow.\n\na.txt\nb.txt\nc.txt\n[more files follow: call glob again with cursor \"eyJ0IjoiZ2xvYiIsInEiOiIqLnR4dCIsInAiOiIiLCJmIjoiZC50eHQifQ\", or narrow the pattern or path]", false}.check(t, h)
		step{"grep", `{"pattern":"hit"}`, "Found 10 matches in 5 files. Showing 3; more follow.\n\na.txt:1: hit\na.txt:2: hit\nb.txt:1: hit\n[more follow: call grep again with cursor \"eyJ0IjoiZ3JlcCIsInEiOiJoaXQiLCJwIjoiIiwibSI6ImNvbnRlbnQiLCJmIjoiYi50eHQiLCJsIjoyfQ\", or narrow the pattern, path, glob or type]", false}.check(t, h)
		long := strings.Repeat("y", MaxLineBytes+10)
		h.mustCall("write_file", `{"file_path":"long.txt","content":"`+long+`"}`)
		text := h.mustCall("read_file", `{"file_path":"long.txt"}`)
		if !strings.HasSuffix(text, " [... 10 more bytes]") {
			t.Errorf("long line not cut: ...%s", text[len(text)-40:])
		}
	})
}

// TestFileSizeLimit: writes, edits and reads past MaxFileBytes fail.
func TestFileSizeLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"big.txt": strings.Repeat("x", 20)}, harnessOpts{opts: Options{MaxFileBytes: 10}})
		step{"write_file", `{"file_path":"a.txt","content":"01234567890"}`, "Content is 11 bytes; the limit is 10 bytes.", true}.check(t, h)
		step{"read_file", `{"file_path":"big.txt"}`, "File big.txt is larger than the limit of 10 bytes.", true}.check(t, h)
	})
}

// TestMounts: host directories are copied in with include and exclude
// patterns, within the budget and the allowed roots; a disk workspace keeps
// its own copies.
func TestMounts(t *testing.T) {
	host := t.TempDir()
	for p, c := range map[string]string{
		"main.go": "package main\n", "main_test.go": "package main\n", "go.mod": "module x\n",
		"sub/util.go": "package sub\n", "node_modules/dep/index.js": "x", "README.md": "readme",
	} {
		full := filepath.Join(host, filepath.FromSlash(p))
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	_ = os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o644)
	_ = os.Symlink(filepath.Join(outside, "secret"), filepath.Join(host, "escape"))
	_ = os.Symlink("main.go", filepath.Join(host, "alias.go"))

	mount := Mount{Host: host, Path: "proj", Include: []string{"*.go", "go.mod"}, Exclude: []string{"*_test.go", "node_modules"}}
	files := func(b *Backend) string {
		w, _ := newWorkspace(b, 0)
		var out []string
		_ = w.Walk("", func(in Info) error { out = append(out, in.Path); return nil })
		return strings.Join(out, " ")
	}
	b, err := Open(Config{Mounts: []Mount{mount}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(b); got != "proj/go.mod proj/main.go proj/sub/util.go" {
		t.Errorf("memory mount: %s", got)
	}
	follow := mount
	follow.FollowSymlinks = true
	b, err = Open(Config{Mounts: []Mount{follow}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(b); got != "proj/alias.go proj/go.mod proj/main.go proj/sub/util.go" {
		t.Errorf("followed links (the escaping one must stay out): %s", got)
	}
	if _, err := Open(Config{Mounts: []Mount{{Host: host}}, MaxBytes: 20}, quiet); err == nil || !strings.Contains(err.Error(), "byte budget of 20 bytes") {
		t.Errorf("budget: %v", err)
	}
	if _, err := Open(Config{Mounts: []Mount{{Host: host}}, AllowedRoots: []string{outside}}, quiet); err == nil || !strings.Contains(err.Error(), "not under an allowed root") {
		t.Errorf("allowed roots: %v", err)
	}
	if _, err := Open(Config{Mounts: []Mount{{Host: host, Path: "../x"}}}, quiet); err == nil {
		t.Error("a mount path with .. was accepted")
	}
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "proj"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "proj", "main.go"), []byte("mine"), 0o644)
	b, err = Open(Config{Backend: "disk", Root: root, StateDir: t.TempDir(), Mounts: []Mount{mount}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := files(b); got != "proj/go.mod proj/main.go proj/sub/util.go" {
		t.Errorf("disk mount: %s", got)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "proj", "main.go")); string(data) != "mine" {
		t.Errorf("the disk mount overwrote an existing file: %q", data)
	}
}
