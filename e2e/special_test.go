//go:build unix

package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// callWithin is call, but the process is killed, and the test fails, when
// the answer takes longer than d.
func (p *proc) callWithin(d time.Duration, id int, method string, params any) frame {
	p.t.Helper()
	kill := time.AfterFunc(d, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	start := time.Now()
	f := p.call(id, method, params)
	if time.Since(start) > d {
		p.t.Fatalf("%s answered after %v, more than %v", method, time.Since(start), d)
	}
	return f
}

// TestSpecialFilesInDiskWorkspace puts a named pipe, a unix socket and (as
// root) a character device in a disk workspace. Every file tool answers at
// once: ls lists them with their kind, glob and grep pass over them, and
// the tools that would open one refuse it by name. The process then exits
// soon after SIGTERM.
func TestSpecialFilesInDiskWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	special := map[string]string{"pipe": "named pipe", "sock": "socket"}
	// Making a device node needs privilege; /dev/null itself cannot be
	// reached, as links out of the root are refused.
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		special["null"] = "device"
	} else {
		t.Logf("no device node: %v", err)
	}

	p := start(t, "", "--workspace", dir, "--state-dir", t.TempDir(), "--store", "memory")
	p.initialize()
	const limit = 5 * time.Second
	id := 0
	tool := func(name string, args map[string]any) toolResult {
		t.Helper()
		id++
		return decodeToolResult(t, p.callWithin(limit, id, "tools/call", callTool(name, args)))
	}

	var listing struct {
		Entries []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"entries"`
	}
	r := tool("ls", map[string]any{})
	raw := p.out[len(p.out)-1]
	var env struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Result.StructuredContent, &listing) != nil {
		t.Fatalf("ls: %s", raw)
	}
	kinds := map[string]string{}
	for _, e := range listing.Entries {
		kinds[e.Name] = e.Type
	}
	for name, kind := range special {
		if kinds[name] != kind {
			t.Errorf("ls lists %s as %q, want %q: %s", name, kinds[name], kind, r.Content[0].Text)
		}
	}
	if r := tool("glob", map[string]any{"pattern": "**"}); r.IsError || strings.Contains(r.Content[0].Text, "pipe") {
		t.Errorf("glob: %s", r.Content[0].Text)
	}
	if r := tool("grep", map[string]any{"pattern": "needle"}); r.IsError || !strings.Contains(r.Content[0].Text, "a.txt:1") {
		t.Errorf("grep: %s", r.Content[0].Text)
	}
	for name, kind := range special {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"ls", map[string]any{"path": name}},
			{"glob", map[string]any{"pattern": "*", "path": name}},
			{"grep", map[string]any{"pattern": "x", "path": name}},
			{"read_file", map[string]any{"file_path": name}},
			{"write_file", map[string]any{"file_path": name, "content": "x"}},
			{"write_file", map[string]any{"file_path": name, "content": "x", "overwrite": true}},
			{"edit_file", map[string]any{"file_path": name, "old_string": "a", "new_string": "b"}},
			{"apply_edits", map[string]any{"edits": []map[string]any{{"op": "write", "file_path": name, "content": "x", "overwrite": true}}}},
			{"rm", map[string]any{"path": name}},
		} {
			r := tool(c.tool, c.args)
			if !r.IsError || !strings.Contains(r.Content[0].Text, kind) {
				t.Errorf("%s %v: want a refusal naming the %s, got %s", c.tool, c.args, kind, r.Content[0].Text)
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe changed: %v %v", fi, err)
	}

	p.signal(syscall.SIGTERM)
	stopped := time.Now()
	kill := time.AfterFunc(10*time.Second, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	if code := p.wait(); code != 0 || time.Since(stopped) > 10*time.Second {
		t.Errorf("exit code %d %v after SIGTERM; stderr:\n%s", code, time.Since(stopped), p.stderr)
	}
}
