package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/schema"
)

// stdioClient drives run over pipes, as a client drives the binary.
type stdioClient struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Scanner
	done   chan int
	nextID int
}

func startStdio(t *testing.T, args ...string) *stdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan int, 1)}
	c.out.Buffer(make([]byte, 1<<20), 16<<20)
	stateDir := t.TempDir()
	go func() {
		code := run(context.Background(), append([]string{"--log-level", "error", "--state-dir", stateDir}, args...), inR, outW, io.Discard)
		outW.Close()
		c.done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop after stdin closed")
		}
	})
	c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "1"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *stdioClient) send(msg map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(msg)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// request sends a request and returns its result, skipping notifications.
func (c *stdioClient) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	for c.out.Scan() {
		var r struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
			c.t.Fatalf("not JSON on stdout: %q", c.out.Text())
		}
		if r.ID == nil || *r.ID != c.nextID {
			continue
		}
		if r.Error != nil {
			c.t.Fatalf("%s: error %s", method, r.Error)
		}
		return r.Result
	}
	c.t.Fatalf("%s: no response (%v)", method, c.out.Err())
	return nil
}

// call calls a tool and returns its text, without the line that names the
// session of its structured content, and whether it failed.
func (c *stdioClient) call(tool, args string) (string, bool) {
	c.t.Helper()
	raw := c.request("tools/call", map[string]any{"name": tool, "arguments": json.RawMessage(args)})
	var r struct {
		Content           []struct{ Text string }
		StructuredContent struct{ Session string }
		IsError           bool
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatal(err)
	}
	text := r.Content[0].Text
	if h := r.StructuredContent.Session; h != "" {
		text = strings.TrimSuffix(text, "\n\nSession: "+h)
	}
	return text, r.IsError
}

func (c *stdioClient) expect(tool, args, want string, wantErr bool) {
	c.t.Helper()
	got, isErr := c.call(tool, args)
	if got != want || isErr != wantErr {
		c.t.Errorf("%s %s:\n got (isError=%v) %q\nwant (isError=%v) %q", tool, args, isErr, got, wantErr, want)
	}
}

// TestWorkspaceOverStdio drives the server as a client would, over stdio,
// on both backends: default sections, read-before-write denial, an
// apply_edits rolled back whole, and the workspace as resources.
func TestWorkspaceOverStdio(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "notes.md"), []byte("# Notes\nfirst\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"memory", []string{"--mount", host + ":proj"}},
		{"disk", []string{"--workspace", host}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := startStdio(t, c.args...)
			p := "notes.md"
			if c.name == "memory" {
				p = "proj/notes.md"
			}
			var list struct{ Tools []struct{ Name string } }
			_ = json.Unmarshal(cl.request("tools/list", map[string]any{}), &list)
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, " "); !strings.HasSuffix(got, "planning_read_plan ls directory_tree file_info read_file read_multiple_files write_file edit_file create_directory move_file glob grep rm apply_edits session_undo session_checkpoint session_restore") {
				t.Errorf("tools: %s", got)
			}
			cl.expect("edit_file", fmt.Sprintf(`{"file_path":%q,"old_string":"first","new_string":"1st"}`, p), fmt.Sprintf("File '%s' must be read before overwriting.", p), true)
			cl.expect("read_file", fmt.Sprintf(`{"file_path":%q}`, p), fmt.Sprintf("Read file %s (lines 1-2 of 2).\n\n   1 | # Notes\n   2 | first", p), false)
			cl.expect("apply_edits", fmt.Sprintf(`{"edits":[{"op":"edit","file_path":%q,"old_string":"first","new_string":"1st"},{"op":"write","file_path":"new.md","content":"new"},{"op":"rm","path":"missing"}]}`, p),
				"edits[2] (rm missing) failed: No such file or directory: missing No edit was applied.", true)
			cl.expect("read_file", fmt.Sprintf(`{"file_path":%q}`, p), fmt.Sprintf("Read file %s (lines 1-2 of 2).\n\n   1 | # Notes\n   2 | first", p), false)
			cl.expect("read_file", `{"file_path":"new.md"}`, "File does not exist: new.md", true)
			cl.expect("apply_edits", fmt.Sprintf(`{"edits":[{"op":"edit","file_path":%q,"old_string":"first","new_string":"1st"},{"op":"write","file_path":"new.md","content":"new"}]}`, p),
				fmt.Sprintf("Applied 2 edits to 2 files.\n\nedits[0]: Replaced 1 occurrence in %s.\nedits[1]: Created new.md (3 bytes).", p), false)
			var res struct{ Contents []struct{ Text string } }
			_ = json.Unmarshal(cl.request("resources/read", map[string]any{"uri": "wink://workspace/files/" + p}), &res)
			if len(res.Contents) != 1 || res.Contents[0].Text != "# Notes\n1st\n" {
				t.Errorf("resource: %+v", res)
			}
			data, _ := os.ReadFile(filepath.Join(host, "notes.md"))
			if want := map[string]string{"memory": "# Notes\nfirst\n", "disk": "# Notes\n1st\n"}[c.name]; string(data) != want {
				t.Errorf("host file: %q, want %q", data, want)
			}
		})
	}
}

func TestParseMount(t *testing.T) {
	for in, want := range map[string][2]string{
		"/a/b":        {"/a/b", ""},
		"/a/b:dest":   {"/a/b", "dest"},
		"/a/b:d/e":    {"/a/b", "d/e"},
		`C:\src`:      {`C:\src`, ""},
		`C:\src:proj`: {`C:\src`, "proj"},
		"rel:":        {"rel", ""},
	} {
		m, err := parseMount(in)
		if err != nil || m.Host != want[0] || m.Path != want[1] {
			t.Errorf("parseMount(%q) = %+v, %v; want host %q path %q", in, m, err, want[0], want[1])
		}
	}
	if _, err := parseMount(":x"); err == nil {
		t.Error("parseMount(\":x\") accepted an empty host")
	}
}

// TestReadBeforeWriteConfig: the configuration switches the policy off.
func TestReadBeforeWriteConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wink.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  read_before_write: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := startStdio(t, "--config", cfg, "--workspace", dir)
	cl.expect("edit_file", `{"file_path":"a.txt","old_string":"a","new_string":"b"}`, "Replaced 1 occurrence in a.txt.", false)
}

// TestEveryToolSchemaCompiles: every built-in tool's input schema compiles
// and explains a refusal.
func TestEveryToolSchemaCompiles(t *testing.T) {
	a, err := build(&flags{conformance: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	srv := a.srv
	for _, tool := range srv.Tools() {
		_, err := tool.Parse([]byte(`{"no such argument":1}`))
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: %v", tool.Name(), err)
		}
	}
}

// TestSessionFlag: --session names the stdio process's session, in the
// results of calls that change state and in the wink://session resource; a
// bad name, or --session with --http, stops the server at startup.
func TestSessionFlag(t *testing.T) {
	cl := startStdio(t, "--session", "desk-1")
	var r struct {
		Content           []struct{ Text string }
		StructuredContent struct{ Session string }
	}
	_ = json.Unmarshal(cl.request("tools/call", map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "x"}}), &r)
	if len(r.Content) != 1 || !strings.HasSuffix(r.Content[0].Text, "\n\nSession: desk-1") || r.StructuredContent.Session != "desk-1" {
		t.Errorf("setup: %+v", r)
	}
	var res struct{ Contents []struct{ Text string } }
	_ = json.Unmarshal(cl.request("resources/read", map[string]any{"uri": "wink://session"}), &res)
	if len(res.Contents) != 1 || res.Contents[0].Text != "desk-1" {
		t.Errorf("wink://session: %+v", res)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--session", "two words"}, 2, `invalid value "two words" for flag -session: "two words" is not a session name`},
		{[]string{"--session", strings.Repeat("x", 129)}, 2, "is not a session name"},
		{[]string{"--session", "desk-1", "--http", "127.0.0.1:0"}, 1, "--session names the session of a stdio process"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr.String())
		}
	}
}

// TestCommandLine: --help writes the usage to stdout (so that it pipes
// into a pager) and exits 0; a bad command line is said once on stderr,
// with where to find the flags, and exits 2.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"--help"}, 0, "Usage: wink-mcp [flags]", ""},
		{[]string{"-h"}, 0, "Usage: wink-mcp [flags]", ""},
		{[]string{"--bogus"}, 2, "", "wink-mcp: flag provided but not defined: -bogus\nRun 'wink-mcp --help' for the flags.\n"},
		{[]string{"extra"}, 2, "", "wink-mcp: unexpected argument \"extra\"\nRun 'wink-mcp --help' for the flags.\n"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), c.args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.HasPrefix(stdout.String(), c.stdout) || (c.stdout == "") != (stdout.Len() == 0) || stderr.String() != c.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, stdout.String(), stderr.String())
		}
	}
}

// TestRecoverCommand: "wink-mcp recover" takes its state directory from
// --state-dir, else from the configuration file, says what it found on
// stdout, and refuses a bad command line with exit 2.
func TestRecoverCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(cfg, []byte("state_dir: "+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"recover", "--state-dir", dir}, 0, "No disk workspace keeps its journals in " + dir},
		{[]string{"recover", "--config", cfg}, 0, "No disk workspace keeps its journals in " + dir},
		{[]string{"recover", "extra"}, 2, ""},
		{[]string{"recover", "--bogus"}, 2, ""},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), c.args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, stdout.String(), stderr.String())
		}
	}
}

// TestExampleServes: config/example.yaml as shipped serves stdio and lists
// its tools to a local client, with nothing to set up first.
func TestExampleServes(t *testing.T) {
	cl := startStdio(t, "--config", "config/example.yaml")
	var r struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(cl.request("tools/list", map[string]any{}), &r); err != nil || len(r.Tools) == 0 {
		t.Fatalf("tools/list: %+v, %v", r, err)
	}
}

// TestClosedSectionConfig: planning.open false closes the planning
// section, whose tools then wait for open_section; closing a section that
// is off stops the server at startup, naming the key.
func TestClosedSectionConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wink.yaml")
	if err := os.WriteFile(cfg, []byte("planning: {open: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := startStdio(t, "--config", cfg)
	cl.expect("planning_read_plan", `{}`, `Tool 'planning_read_plan' is in section 'planning', which is closed: call open_section {"section": "planning"} first.`, true)

	off := filepath.Join(dir, "off.yaml")
	if err := os.WriteFile(off, []byte("sections: [planning]\nworkspace:\n  open: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	code := run(t.Context(), []string{"--config", off}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "off.yaml:3: workspace.open: the workspace section is off, so it cannot start closed") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestConsentAndStateKeyConfig: a consent tool that does not exist, and a
// request-state key file holding too short a secret, stop the server at
// startup, naming the key.
func TestConsentAndStateKeyConfig(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("  too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"consent:\n  tools: [nope]\n", "bad.yaml:2: consent.tools: no tool is called \"nope\""},
		{"http:\n  request_state_key_file: " + short + "\n", "bad.yaml:2: http.request_state_key_file: " + short + " holds 9 bytes; want at least 32"},
	} {
		cfg := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(cfg, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		code := run(t.Context(), []string{"--config", cfg}, strings.NewReader(""), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("exit %d, stderr %q, want %q", code, stderr.String(), tc.want)
		}
	}
}

// TestEvaluationNeedsTheWorkspace: the evaluation section without the
// workspace section stops the server at startup, saying why.
func TestEvaluationNeedsTheWorkspace(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(cfg, []byte("sections: [evaluation]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	code := run(context.Background(), []string{"--config", cfg, "--store", "memory"}, strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "the evaluation section works on the workspace: add workspace to sections") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestRunCommandNeedsBubblewrap: run_command turned on where bwrap cannot
// be found stops the server at startup, saying why.
func TestRunCommandNeedsBubblewrap(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(cfg, []byte("sections: [workspace, evaluation]\nevaluation:\n  run_command:\n    enabled: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	var stderr strings.Builder
	code := run(context.Background(), []string{"--config", cfg, "--store", "memory"}, strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "evaluation.run_command needs bubblewrap (bwrap), which is not installed here") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestConsoleCommandLine: the console listens on loopback only, and on a
// state directory that holds the sessions of several --session names it
// asks which.
func TestConsoleCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, "store", "stdio-"+name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"console", "--state-dir", dir}, "--session a, b: say which with --session"},
		{[]string{"console", "--state-dir", dir, "--session", "a", "--listen", "0.0.0.0:0"}, "want a loopback address"},
		{[]string{"console", "extra"}, "unexpected arguments"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), c.args, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, stderr.String())
		}
	}
}

// TestCPUProfile: --cpu-profile writes a profile of the whole run, for go
// tool pprof, once the server exits; a file that cannot be created is said
// on stderr before anything is served.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"x"}}}
`
	for _, c := range []struct {
		name, path string
		code       int
		stderr     string
	}{
		{"written", filepath.Join(dir, "cpu.prof"), 0, ""},
		{"not created", filepath.Join(dir, "missing", "cpu.prof"), 1, "wink-mcp: --cpu-profile: open " + filepath.Join(dir, "missing", "cpu.prof") + ": no such file or directory\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(t.Context(), []string{"--log-level", "error", "--state-dir", t.TempDir(), "--cpu-profile", c.path}, strings.NewReader(in), &stdout, &stderr)
			if code != c.code || stderr.String() != c.stderr {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			if c.code != 0 {
				if stdout.Len() != 0 {
					t.Errorf("stdout %q", stdout.String())
				}
				return
			}
			if !strings.Contains(stdout.String(), `"id":1,"result"`) {
				t.Errorf("the call was not answered: %q", stdout.String())
			}
			b, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // a gzipped profile.proto
				t.Errorf("not a profile: % x", b[:min(len(b), 16)])
			}
		})
	}
}
