package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// anyHandle finds a session handle, or a name of that shape.
var anyHandle = regexp.MustCompile(`s_[A-Z2-7]{26}`)

// logID is the identifier logs and audit records give the session with
// handle h, as docs/hooks.md says to compute it.
func logID(h string) string {
	sum := sha256.Sum256([]byte(h))
	return "sid_" + hex.EncodeToString(sum[:])[:12]
}

// auditConfig writes a configuration that audits every call to the log
// and to a file in dir, and returns its path and the audit file's.
func auditConfig(t *testing.T, dir string) (config, audit string) {
	t.Helper()
	audit = filepath.Join(dir, "audit.jsonl")
	config = filepath.Join(dir, "wink.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "hooks:\n  audit: {log: true, file: %q}\n", audit), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, audit
}

// noHandles fails the test if the logs or the audit file hold a handle,
// and checks that they name the session of handle h by its identifier.
func noHandles(t *testing.T, logs, audit, h string) {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"the logs": logs, "the audit file": string(data)} {
		if m := anyHandle.FindAllString(text, -1); m != nil {
			t.Errorf("%s hold handles %q:\n%s", name, m, text)
		}
		if !strings.Contains(text, "session="+logID(h)) && !strings.Contains(text, `"session":"`+logID(h)+`"`) {
			t.Errorf("%s do not name the session %s:\n%s", name, logID(h), text)
		}
	}
}

// TestNoHandleInLogsStdio: a stdio process whose session is named with
// --session (in the shape of a handle), audited to the log and a file, at
// debug level, makes calls that succeed, fail and are refused, and reads
// its session's resources: neither its logs nor the audit file hold the
// name.
func TestNoHandleInLogsStdio(t *testing.T) {
	dir := t.TempDir()
	config, audit := auditConfig(t, dir)
	name := "s_" + rand.Text()
	p := start(t, dir, "--config", config, "--log-level", "debug", "--session", name)
	p.initialize()
	// As a legacy client, in the process's session; then as a client of
	// the 2026-07-28 era that names it.
	for i, modern := range []bool{false, true} {
		c := &stdioClient{p: p, modern: modern, id: 100 * i}
		args := func(a map[string]any) map[string]any {
			if modern {
				return with(name, a)
			}
			return a
		}
		c.call(t, "planning_setup_plan", args(map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}))
		c.call(t, "planning_update_step", args(map[string]any{"step_id": 9, "status": "done"}))
		c.call(t, "planning_read_plan", args(map[string]any{"verbose": true}))
		c.call(t, "write_file", args(map[string]any{"file_path": "a.txt", "content": "a"}))
		c.call(t, "edit_file", args(map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"}))
	}
	for i, uri := range []string{"wink://session", "wink://session/log", "wink://plan"} {
		p.call(200+i, "resources/read", map[string]any{"uri": uri})
	}
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	noHandles(t, p.stderr.String(), audit, name)
}

// TestNoHandleInLogsHTTP: the same over HTTP, with clients of the
// 2026-07-28 era (passing the handle, forgetting it, naming an unknown
// one) and a legacy client whose connection has a session of its own,
// which it ends.
func TestNoHandleInLogsHTTP(t *testing.T) {
	dir := t.TempDir()
	config, audit := auditConfig(t, dir)
	s := serveHTTP(t, "--config", config, "--log-level", "debug")
	c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "")
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)
	c.call(t, "planning_update_step", with(h, map[string]any{"step_id": 1, "status": "done"}))
	c.call(t, "planning_update_step", with(h, map[string]any{"step_id": 9, "status": "done"}))
	c.call(t, "write_file", with(h, map[string]any{"file_path": "a.txt", "content": "a"}))
	c.call(t, "planning_update_step", map[string]any{"step_id": 1, "status": "done"})
	c.call(t, "planning_read_plan", map[string]any{})
	c.call(t, "planning_read_plan", with("s_"+rand.Text(), map[string]any{}))
	if _, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "wink://session/log", Meta: mcp.Meta{"io.github.wink-mcp/session": h}}); err != nil {
		t.Fatal(err)
	}
	legacy := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "2025-11-25")
	legacy.call(t, "planning_setup_plan", map[string]any{"objective": "Theirs"})
	legacy.call(t, "planning_read_plan", map[string]any{})
	if err := legacy.cs.Close(); err != nil {
		t.Fatal(err)
	}
	s.p.signal(syscall.SIGTERM)
	if code := s.p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, s.p.stderr)
	}
	noHandles(t, s.p.stderr.String(), audit, h)
}
