package e2e

import (
	"fmt"
	"os"
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

// TestNumberBeyondFloat64: a number in the arguments that no float64
// holds (1e309) fails the call with an isError result naming the
// argument, not with a JSON-RPC error, whether the tool takes an integer,
// a string or no such argument; in _meta, it fails the call naming the key.
// A number too long, or with too large an exponent, to be checked cheaply
// (1e999999: 17 ms each to compare) is refused before the arguments are
// checked against the schema, each one named.
func TestNumberBeyondFloat64(t *testing.T) {
	const outOfRange = "number out of range: at most 128 characters, with an exponent from -400 to 400"
	p := start(t, "", "--workspace", t.TempDir())
	p.initialize()
	for i, c := range []struct{ tool, args, want string }{
		{"ls", `{},"_meta":{"io.github.wink-mcp/timeoutMs":1e999}`, "Invalid _meta: io.github.wink-mcp/timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got 1e999"},
		{"read_file", `{"file_path":"a.txt","offset":1e309}`, "Invalid arguments: /offset: integer out of range"},
		{"write_file", `{"file_path":"a.txt","content":-1e309}`, "Invalid arguments: /content: expected string, got number"},
		{"ls", `{"path":"","depth":1e309}`, "Unknown argument 'depth'. ls takes: path, all, cursor, session."},
		{"read_file", `{"file_path":"a.txt","offset":1e999}`, "Invalid arguments: /offset: " + outOfRange},
		{"write_file", `{"file_path":"a.txt","content":[1e999999,"x",-2.5E-999999]}`, "Invalid arguments: /content/0: " + outOfRange + "; /content/2: " + outOfRange},
	} {
		id := i + 1
		p.mustSend(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, c.tool, c.args))
		f, ok := p.await(fmt.Sprint(id))
		if !ok {
			t.Fatalf("no response; stderr:\n%s", p.stderr)
		}
		if f.Error != nil {
			t.Errorf("%s %s: JSON-RPC error %d %q, want an isError result", c.tool, c.args, f.Error.Code, f.Error.Message)
			continue
		}
		if r := decodeToolResult(t, f); !r.IsError || r.Content[0].Text != c.want {
			t.Errorf("%s %s: %s, want the error %q", c.tool, c.args, f.Result, c.want)
		}
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
