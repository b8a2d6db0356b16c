package e2e

import (
	"bufio"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/webtest"
	"github.com/wink-mcp/wink-mcp/session"
)

// TestConsoleOverHTTP: an HTTP server with bearer tokens serves the
// console at /console to a browser that opens it with a token: it shows
// the token's sessions and no other's, and without a token, or with a
// wrong one, nothing.
func TestConsoleOverHTTP(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("token-of-alice\ntoken-of-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--bearer-token-file", tokens)
	base := strings.TrimSuffix(s.url, "/mcp")
	alice, bob := &httpClient{url: s.url, token: "token-of-alice"}, &httpClient{url: s.url, token: "token-of-bob"}
	h := keepState(t, alice, false)
	bob.call(t, "planning_setup_plan", map[string]any{"objective": "Bob's own plan"})

	for name, u := range map[string]string{"no token": base + "/console", "wrong token": base + "/console?token=token-of-eve"} {
		if code, page := webtest.Get(t, webtest.Browser(t), u); code != http.StatusUnauthorized || strings.Contains(page, "Ship it") {
			t.Errorf("%s: %d\n%s", name, code, page)
		}
	}
	b := webtest.Browser(t)
	code, page := webtest.Get(t, b, base+"/console?token=token-of-alice")
	if code != http.StatusOK || !strings.Contains(page, "Ship it") || strings.Contains(page, "Bob's own plan") {
		t.Fatalf("alice's console: %d\n%s", code, page)
	}
	if code, page = webtest.Get(t, b, base+"/console/s/"+session.LogID(h)); code != http.StatusOK || !strings.Contains(page, "planning_setup_plan") || !strings.Contains(page, "notes.md") || strings.Contains(page, h) {
		t.Fatalf("alice's session page, which names the session by its log identifier and never prints its handle: %d\n%s", code, page)
	}
}

// TestConsoleCommand: "wink-mcp console" beside a stdio process started
// with --session and --workspace, on a state directory that holds that
// session, prints a loopback URL with a token; the console shows the
// process's plan as it changes, and undoes a write to the disk workspace
// from its page, the file back on disk.
func TestConsoleCommand(t *testing.T) {
	state, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(cfg, []byte("sections: [planning, workspace, history]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &stdioClient{p: start(t, "", "--state-dir", state, "--session", "desk", "--config", cfg, "--workspace", ws), modern: true}
	if r := p.call(t, "planning_setup_plan", map[string]any{"objective": "Seen from the console"}); r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	p.call(t, "read_file", map[string]any{"file_path": "notes.md"})
	if r := p.call(t, "write_file", map[string]any{"file_path": "notes.md", "content": "v2\n", "overwrite": true}); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}
	// The one --session the state directory holds.
	cmd := exec.Command(binary, "console", "--state-dir", state, "--config", cfg, "--workspace", ws)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "Open ")
	if err != nil || !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/console?token=") {
		t.Fatalf("the console printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	b := webtest.Browser(t)
	if code, page := webtest.Get(t, b, u); code != http.StatusOK || !strings.Contains(page, "Seen from the console") {
		t.Fatalf("the console: %d\n%s", code, page)
	}
	base, _, _ := strings.Cut(u, "?")
	rebound, _ := http.NewRequest(http.MethodGet, u, nil)
	rebound.Host = "evil.example" // a DNS-rebinding attack
	if resp, err := http.DefaultTransport.RoundTrip(rebound); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a request for another Host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	webtest.Post(t, b, base+"/s/"+session.LogID("desk")+"/undo", strings.TrimSuffix(base, "/console"), url.Values{"steps": {"1"}})
	if got, err := os.ReadFile(filepath.Join(ws, "notes.md")); err != nil || string(got) != "v1\n" {
		t.Fatalf("after the console's undo, notes.md holds %q (%v); the console's stderr:\n%s", got, err, stderr.String())
	}
	if r := p.call(t, "planning_setup_plan", map[string]any{"objective": "Changed since"}); r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, page := webtest.Get(t, b, base); strings.Contains(page, "Changed since") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the console does not show the new objective")
		}
	}
}
