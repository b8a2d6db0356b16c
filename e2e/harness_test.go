package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of the harness itself, so that a scenario cannot pass because the
// harness looked away.

func TestHarnessAwaits(t *testing.T) {
	for _, tc := range []struct {
		line string
		id   string
		wait bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "1", true},
		{`{"jsonrpc":"2.0","id":"a b","method":"ping"}`, `"a b"`, true},
		{`{"jsonrpc":"2.0","id": -3 ,"method":"ping"}`, "-3", true},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "", true},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "", true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", false},
		{`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`, "", false},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "", false},
		{`{"jsonrpc":"2.0"}`, "", true},
		{`{bad json`, "", true},
		{`[1,2]`, "", true},
		{hugeLine(1000), "", true},
	} {
		id, wait := awaits(tc.line)
		if id != tc.id || wait != tc.wait {
			t.Errorf("awaits(%.60s) = %q, %v; want %q, %v", tc.line, id, wait, tc.id, tc.wait)
		}
	}
}

func TestHarnessHugeLine(t *testing.T) {
	for _, n := range []int{len(hugeHead) + 4, 1000, 1 << 20} {
		if got := len(hugeLine(n)); got != n {
			t.Errorf("len(hugeLine(%d)) = %d", n, got)
		}
	}
}

func TestHarnessNormalise(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"b":1,"a":"<x> & y"}}`, `{"id":1,"jsonrpc":"2.0","result":{"a":"<x> & y","b":1}}`},
		{`{"n":12345678901234567890,"f":1.50}`, `{"f":1.50,"n":12345678901234567890}`},
		{`{"uri":"wink://session/calls/0123abcd0123abcd","name":"call 0123abcd0123abcd"}`, `{"name":"call <id>","uri":"wink://session/calls/<id>"}`},
		{`{"call_id":"ab12","started":"2026-01-01T00:00:00Z","duration_ns":42}`, `{"call_id":"<id>","duration_ns":"<dur>","started":"<time>"}`},
		{`{"session":"s_ABCDEFGHIJKLMNOPQRSTUVWXYZ","text":"Done.\n\nSession: s_ABCDEFGHIJKLMNOPQRSTUVWX23"}`, `{"session":"<session>","text":"Done.\n\nSession: <session>"}`},
		{`{"text":"[\n  {\n    \"call_id\": \"ab12\",\n    \"started\": \"2026-01-01T00:00:00.1Z\",\n    \"duration_ns\": 42\n  }\n]"}`,
			`{"text":"[\n  {\n    \"call_id\": \"<id>\",\n    \"started\": \"<time>\",\n    \"duration_ns\": \"<dur>\"\n  }\n]"}`},
	} {
		got, err := normalise([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("normalise(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":1} {"b":2}`, `{"a":`, ``} {
		if got, err := normalise([]byte(bad)); err == nil {
			t.Errorf("normalise(%q) = %s, want an error", bad, got)
		}
	}
}

func TestHarnessLogLines(t *testing.T) {
	for _, line := range []string{
		`time=2026-11-21T12:08:01.764Z level=INFO msg="serving MCP over stdio" version=dev tools=4`,
		`time=2026-01-02T03:04:05.000+01:00 level=DEBUG msg="tool call" tool=planning_read_plan`,
		`time=2026-11-21T12:08:01.764Z level=WARN msg="transport: dropping response" message="{\"id\":8}"`,
		`time=2026-11-21T12:08:01.764Z level=ERROR msg=""`,
		`{"time":"2026-11-21T12:08:01.764Z","level":"INFO","msg":"stopped"}`,
	} {
		if !isLogLine(line) {
			t.Errorf("not recognised as a log line: %s", line)
		}
	}
	for _, line := range []string{
		`wink-mcp: config.yaml:1: bogus: unknown key`,
		`WARNING: DATA RACE`,
		`goroutine 1 [running]:`,
		`panic: boom`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"level":"INFO","msg":"no time"}`,
	} {
		if isLogLine(line) {
			t.Errorf("recognised as a log line: %s", line)
		}
	}
}

func TestHarnessParseScenario(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sc, err := parseScenario(write("ok.txtar", `# comment
args: --strategy react  --log-level debug
config: c.yaml
exit: 1
stderr: a: b
stderr: c
raw: true
pipeline: false
huge: 200
-- c.yaml --
x: 1
-- requests --
# a comment line
{"jsonrpc":"2.0","id":1,"method":"ping"}

@huge
{"jsonrpc":"2.0","id":2,"method":"ping"}
-- responses --
{"id":1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sc.args, "|") != "--strategy|react|--log-level|debug" || sc.config != "c.yaml" || sc.exit != 1 ||
		strings.Join(sc.stderr, "|") != "a: b|c" || !sc.raw || sc.pipeline || sc.huge != 200 {
		t.Errorf("directives parsed as %+v", sc)
	}
	if len(sc.requests) != 3 || sc.requests[1] != hugeMarker || len(sc.responses) != 1 {
		t.Errorf("requests %q, responses %q", sc.requests, sc.responses)
	}
	for name, content := range map[string]string{
		"unknown.txtar":   "stdin: x\n-- requests --\n",
		"nocolon.txtar":   "raw\n-- requests --\n",
		"badexit.txtar":   "exit: one\n",
		"noconfig.txtar":  "config: missing.yaml\n",
		"marker.txtar":    "-- requests --\n@huge\n",
		"smallhuge.txtar": "huge: 3\n",
	} {
		if _, err := parseScenario(write(name, content)); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}
