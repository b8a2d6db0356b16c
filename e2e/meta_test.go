package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNonTextArgumentsRefused: a string argument that is not text (a byte
// that is not UTF-8, an escaped lone surrogate) fails validation with a
// result that names it, for any tool, and nothing is written.
func TestNonTextArgumentsRefused(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "", "--workspace", dir)
	p.initialize()
	for i, c := range []struct{ args, want string }{
		{"{\"file_path\":\"a.txt\",\"content\":\"a\xffb\"}", "Invalid arguments: /content: not text"},
		{`{"file_path":"b.txt","content":"a\ud800b"}`, "Invalid arguments: /content: not text"},
		{"{\"file_path\":\"c\xc3.txt\",\"content\":\"x\"}", "Invalid arguments: /file_path: not text"},
	} {
		id := i + 1
		p.mustSend(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":%s}}`, id, c.args))
		f, ok := p.await(fmt.Sprint(id))
		if !ok {
			t.Fatalf("no response; stderr:\n%s", p.stderr)
		}
		r := decodeToolResult(t, f)
		if !r.IsError || !strings.HasPrefix(r.Content[0].Text, c.want) {
			t.Errorf("write_file %s: %s, want an error result starting %q", c.args, f.Result, c.want)
		}
	}
	p.mustSend(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"a\udfffb"}}}`)
	if f, ok := p.await("9"); !ok || !decodeToolResult(t, f).IsError || !strings.Contains(string(f.Result), "/objective: not text") {
		t.Errorf("planning_setup_plan with a lone surrogate: %s", f.Result)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("written: %v", entries)
	}
	p.closeStdin()
	p.wait()
}

// TestMetaDeadlines: a malformed deadline in _meta fails the call with a
// result that names the key; the keys of the former prefix io.wink-mcp/
// still work, and each is logged as deprecated once.
func TestMetaDeadlines(t *testing.T) {
	p := start(t, "", "--workspace", t.TempDir())
	p.initialize()
	const bad = "Invalid _meta: io.github.wink-mcp/"
	for i, c := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"io.github.wink-mcp/timeoutMs": "abc"}, bad + `timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got "abc"`},
		{map[string]any{"io.github.wink-mcp/timeoutMs": -1}, bad + "timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got -1"},
		{map[string]any{"io.github.wink-mcp/timeoutMs": 1e300}, bad + "timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got 1e+300"},
		{map[string]any{"io.wink-mcp/timeoutMs": true}, bad + "timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got true"},
		{map[string]any{"io.github.wink-mcp/deadline": "tomorrow"}, bad + `deadline: expected an RFC 3339 time such as "2026-11-21T12:00:00Z", got "tomorrow"`},
		{map[string]any{"io.github.wink-mcp/deadline": "2000-01-01T00:00:00Z"}, "Deadline expired before executing tool 'ls'."},
		{map[string]any{"io.wink-mcp/deadline": "2000-01-01T00:00:00Z"}, "Deadline expired before executing tool 'ls'."},
		{map[string]any{"io.wink-mcp/deadline": "2000-01-01T00:00:00Z"}, "Deadline expired before executing tool 'ls'."},
		{map[string]any{"io.github.wink-mcp/timeoutMs": "60000"}, ""},
	} {
		params := callTool("ls", map[string]any{})
		params["_meta"] = c.meta
		r := decodeToolResult(t, p.call(i+1, "tools/call", params))
		if c.want == "" {
			if r.IsError {
				t.Errorf("_meta %v: %q, want success", c.meta, r.Content[0].Text)
			}
			continue
		}
		if !r.IsError || r.Content[0].Text != c.want {
			t.Errorf("_meta %v: %q, want the error %q", c.meta, r.Content[0].Text, c.want)
		}
	}
	p.closeStdin()
	p.wait()
	for _, key := range []string{"io.wink-mcp/deadline", "io.wink-mcp/timeoutMs"} {
		if n := strings.Count(p.stderr.String(), "deprecated _meta key was used\" key="+key+" "); n != 1 {
			t.Errorf("deprecation of %s logged %d times, want once; stderr:\n%s", key, n, p.stderr)
		}
	}
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
