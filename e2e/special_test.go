//go:build unix

package e2e

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// answerWithin bounds each answer in these tests: a call that blocks on a
// special file would run to the server's 30 s deadline.
const answerWithin = 5 * time.Second

// exitWithin bounds the time from SIGTERM to the exit of the process.
const exitWithin = 10 * time.Second

// specialFiles puts a named pipe, a unix socket and (as root) a character
// device in dir, and returns their names with the kind ls gives them.
func specialFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
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
	t.Cleanup(func() { ln.Close() })
	special := map[string]string{"pipe": "named pipe", "sock": "socket"}
	// Making a device node needs privilege; /dev/null itself cannot be
	// reached, as links out of the root are refused.
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		special["null"] = "device"
	} else {
		t.Logf("no device node: %v", err)
	}
	return special
}

// checkSpecial calls every file tool on the special files of dir through
// c: ls lists them with their kind, glob and grep pass over them, and the
// tools that would open one refuse it by name, each answering within
// answerWithin. p is killed when the calls take too long together, so
// that a hung call fails the test instead of hanging it.
func checkSpecial(t *testing.T, p *proc, c caller, dir string, special map[string]string) {
	t.Helper()
	kill := time.AfterFunc(time.Minute, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	tool := func(name string, args map[string]any) result {
		t.Helper()
		start := time.Now()
		r := c.call(t, name, args)
		if d := time.Since(start); d > answerWithin {
			t.Errorf("%s %v answered after %v, more than %v", name, args, d, answerWithin)
		}
		return r
	}

	r := tool("ls", map[string]any{})
	kinds := map[string]string{}
	entries, _ := r.StructuredContent["entries"].([]any)
	for _, e := range entries {
		e, _ := e.(map[string]any)
		name, _ := e["name"].(string)
		kinds[name], _ = e["type"].(string)
	}
	for name, kind := range special {
		if kinds[name] != kind {
			t.Errorf("ls lists %s as %q, want %q: %s", name, kinds[name], kind, r.text())
		}
	}
	if r := tool("glob", map[string]any{"pattern": "**"}); r.IsError || strings.Contains(r.text(), "pipe") {
		t.Errorf("glob: %s", r.text())
	}
	if r := tool("grep", map[string]any{"pattern": "needle"}); r.IsError || !strings.Contains(r.text(), "a.txt:1") {
		t.Errorf("grep: %s", r.text())
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
			{"move_file", map[string]any{"source": name, "destination": name + ".moved"}},
		} {
			r := tool(c.tool, c.args)
			if !r.IsError || !strings.Contains(r.text(), kind) {
				t.Errorf("%s %v: want a refusal naming the %s, got %s", c.tool, c.args, kind, r.text())
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe changed: %v %v", fi, err)
	}
}

// stopWithin sends SIGTERM to p and checks that it exits cleanly within
// exitWithin.
func stopWithin(t *testing.T, p *proc) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	stopped := time.Now()
	kill := time.AfterFunc(exitWithin+5*time.Second, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	if code := p.wait(); code != 0 || time.Since(stopped) > exitWithin {
		t.Errorf("exit code %d %v after SIGTERM, want 0 within %v; stderr:\n%s", code, time.Since(stopped), exitWithin, p.stderr)
	}
}

// TestSpecialFilesInDiskWorkspace: with a named pipe, a unix socket and a
// device node in the disk root, every file tool answers at once over
// stdio, and the process exits soon after SIGTERM.
func TestSpecialFilesInDiskWorkspace(t *testing.T) {
	dir := t.TempDir()
	special := specialFiles(t, dir)
	p := start(t, "", "--workspace", dir, "--store", "memory")
	p.initialize()
	checkSpecial(t, p, &stdioClient{p: p}, dir, special)
	stopWithin(t, p)
}

// TestHTTPExitsSoonAfterSIGTERM: over HTTP the same holds, and the process
// exits within exitWithin of SIGTERM although a call is in flight (one
// that waits for the client's answer to an elicitation, which never
// comes) and a standalone stream is open.
func TestHTTPExitsSoonAfterSIGTERM(t *testing.T) {
	dir := t.TempDir()
	special := specialFiles(t, dir)
	s := serveHTTP(t, "--workspace", dir, "--store", "memory", "--conformance")
	c := &httpClient{url: s.url}
	c.initialize(t)
	checkSpecial(t, s.p, c, dir, special)

	legacy := &httpClient{url: s.url}
	legacy.post(t, "initialize", "", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "wink-e2e", "version": "1"}})
	legacy.postRaw(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := legacy.postRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"who?"}}}`)
	events := bufio.NewScanner(call.Body)
	for events.Scan() && !strings.Contains(events.Text(), "elicitation/create") {
	}
	stopWithin(t, s.p)
}
