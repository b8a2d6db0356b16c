package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/hooks"
)

// TestAuditFileAcrossRestarts drives the binary with an audit file: a clean
// exit writes every record; a killed server leaves only whole records, in
// the order of the calls, every one it answered (TestAuditFileKilled
// kills it under load); the next server appends after them.
func TestAuditFileAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	config := filepath.Join(dir, "wink.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "hooks:\n  audit: {file: %q}\n", path), 0o600); err != nil {
		t.Fatal(err)
	}
	// run starts a server and makes n planning_setup_plan calls whose
	// objectives say which run and call they are, each answered before
	// the next is sent.
	run := func(name string, n int) *proc {
		p := start(t, dir, "--config", config)
		p.initialize()
		for i := range n {
			f := p.call(i+1, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": fmt.Sprintf("%s %d", name, i)}))
			if r := decodeToolResult(t, f); r.IsError {
				t.Fatalf("%s call %d failed: %s", name, i, r.Content[0].Text)
			}
		}
		return p
	}
	objectives := func() []string {
		t.Helper()
		recs, err := hooks.ReadAuditFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			var args struct{ Objective string }
			if err := json.Unmarshal(r.Args, &args); err != nil {
				t.Fatalf("record %s: %v", r.CallID, err)
			}
			out = append(out, args.Objective)
		}
		return out
	}

	// A clean exit: every record.
	p := run("first", 20)
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	got := objectives()
	if len(got) != 20 || got[0] != "first 0" || got[19] != "first 19" {
		t.Fatalf("after a clean exit: %q", got)
	}
	// The audit log has every call too, before the server says it stopped.
	logs := p.stderr.String()
	stopped := strings.Index(logs, "msg=stopped")
	if n := strings.Count(logs[:max(0, stopped)], `msg="tool call"`); stopped < 0 || n != 20 {
		t.Errorf("%d audit log lines before the last line, want 20; stderr:\n%s", n, logs)
	}

	// Killed: every call answered, whole records in the order of the
	// calls.
	p = run("second", 40)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.drain()
	_ = p.cmd.Wait()
	p.exited = true
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Errorf("the file ends in a partial line: %q", data[max(0, len(data)-80):])
	}
	got = objectives()
	if len(got) != 60 {
		t.Fatalf("after a kill: %d records, want 60", len(got))
	}
	for i, o := range got[20:] {
		if want := fmt.Sprintf("second %d", i); o != want {
			t.Fatalf("after a kill, record %d is %q, want %q", 20+i, o, want)
		}
	}
	kept := len(got)

	// The next server appends after what is there.
	p = run("third", 1)
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	got = objectives()
	if len(got) != kept+1 || got[kept] != "third 0" {
		t.Fatalf("after a restart: %d records, last %q", len(got), got[len(got)-1])
	}
}
