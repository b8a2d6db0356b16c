package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestResourceNotFound: reading a file of the workspace that does not
// exist, or the record of a call that does not exist, is "resource not
// found" (-32002), not an internal error.
func TestResourceNotFound(t *testing.T) {
	p := start(t, "", "--workspace", t.TempDir())
	p.initialize()
	for i, uri := range []string{"wink://workspace/files/nope.txt", "wink://session/calls/0000000000000000", "wink://nope"} {
		f := p.call(i+1, "resources/read", map[string]any{"uri": uri})
		if f.Error == nil || f.Error.Code != -32002 {
			t.Errorf("resources/read %s: %+v %s, want the error -32002", uri, f.Error, f.Result)
		}
	}
	p.closeStdin()
	p.wait()
}

// TestSubscriptionToOneFile: a client subscribed to one file of a disk
// workspace is not told of a write to another file, and is told of a
// write to its own.
func TestSubscriptionToOneFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := start(t, "", "--workspace", dir)
	p.initialize()
	const uri = "wink://workspace/files/a.txt"
	for i, name := range []string{"a.txt", "b.txt"} {
		if r := decodeToolResult(t, p.call(i+1, "tools/call", callTool("read_file", map[string]any{"file_path": name}))); r.IsError {
			t.Fatalf("read_file %s: %s", name, r.Content[0].Text)
		}
	}
	if f := p.call(3, "resources/subscribe", map[string]any{"uri": uri}); f.Error != nil {
		t.Fatalf("subscribe: %s", f.Error.Message)
	}
	updates := func() []string {
		var uris []string
		for _, line := range p.out {
			var n struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			if json.Unmarshal(line, &n) == nil && n.Method == "notifications/resources/updated" {
				uris = append(uris, n.Params.URI)
			}
		}
		return uris
	}
	edit := func(id int, name string) {
		t.Helper()
		args := map[string]any{"file_path": name, "old_string": name, "new_string": name + " edited"}
		if r := decodeToolResult(t, p.call(id, "tools/call", callTool("edit_file", args))); r.IsError {
			t.Fatalf("edit_file %s: %s", name, r.Content[0].Text)
		}
	}
	edit(4, "b.txt")
	edit(5, "a.txt")
	for id := 6; len(updates()) == 0 && id < 200; id++ {
		p.call(id, "ping", nil)
	}
	p.call(200, "ping", nil)
	if got := updates(); len(got) != 1 || got[0] != uri {
		t.Errorf("resources/updated for %q, want one, for %s", got, uri)
	}
	p.closeStdin()
	p.wait()
}
