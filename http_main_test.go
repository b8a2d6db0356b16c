package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// failsafe bounds every wait; no test asserts how long anything takes.
const failsafe = 30 * time.Second

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:1": true, "[::1]:9": true, "127.1.2.3:0": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:1": false, "10.0.0.1:80": false, "example.com:80": false, "nonsense": false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	if warn, err := checkExposure("127.0.0.1:0", false, false); warn || err != nil {
		t.Errorf("loopback: warn %v, err %v", warn, err)
	}
	if _, err := checkExposure("0.0.0.0:8080", false, false); err == nil || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("public without auth: %v", err)
	}
	if warn, err := checkExposure("0.0.0.0:8080", true, false); warn || err != nil {
		t.Errorf("public with auth: warn %v, err %v", warn, err)
	}
	if warn, err := checkExposure("0.0.0.0:8080", false, true); !warn || err != nil {
		t.Errorf("public with --insecure: warn %v, err %v", warn, err)
	}
}

// TestPublicAddressWithoutAuthRefusesToStart runs main's logic: it exits 2
// before listening.
func TestPublicAddressWithoutAuthRefusesToStart(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--http", "0.0.0.0:0", "--state-dir", t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "not a loopback address") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestBearerTokensFromFileAndEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("# tokens\n\n  first-token  \nsecond\n"), 0o600)
	f, err := parseFlags([]string{"--bearer-token-file", file, "--allowed-origins", "https://a.example, https://b.example"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := httpSecurity(cfg.HTTP, func(k string) string {
		if k == bearerTokensEnv {
			return "env-one,env-two"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sec.BearerTokens, " "); got != "first-token second env-one env-two" {
		t.Errorf("tokens: %q", got)
	}
	if got := strings.Join(sec.AllowedOrigins, " "); got != "https://a.example https://b.example" {
		t.Errorf("origins: %q", got)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("# nothing\n"), 0o600)
	cfg.HTTP.Auth.BearerTokenFile = empty
	if _, err := httpSecurity(cfg.HTTP, func(string) string { return "" }); err == nil {
		t.Error("an empty token file was accepted")
	}
}

// buildBinary builds wink-mcp once for the end-to-end tests.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "wink-e2e")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "wink-mcp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// process is the wink-mcp binary serving HTTP on a free loopback port.
type process struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	mu     *sync.Mutex
	exited chan error
}

func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--http", "127.0.0.1:0", "--log-format", "json", "--state-dir", t.TempDir()}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	re := regexp.MustCompile(`"msg":"serving MCP over HTTP".*?"addr":"([^"]+)"`)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := re.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() { p.exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-addr:
		p.url = "http://" + a + "/mcp"
	case err := <-p.exited:
		t.Fatalf("wink-mcp exited: %v\n%s", err, p.logs())
	case <-time.After(failsafe):
		t.Fatalf("wink-mcp did not start:\n%s", p.logs())
	}
	return p
}

func (p *process) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// rpc posts one JSON-RPC message with the session's headers.
func rpc(t *testing.T, url, sid string, body any) *http.Response {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func initialize(t *testing.T, url string) string {
	t.Helper()
	resp := rpc(t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{"sampling": map[string]any{}}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	resp = rpc(t, url, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	resp.Body.Close()
	return sid
}

// dataLines yields the data of each SSE event.
func dataLines(r io.Reader) func(func(string) bool) {
	return func(yield func(string) bool) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
				if !yield(d) {
					return
				}
			}
		}
	}
}

// TestSIGTERMDrainsCallsInFlight starts the binary, leaves a call in flight
// on each of several sessions (each waits for the client's sampling
// reply), sends SIGTERM, then answers: every call completes, and the
// process exits 0.
func TestSIGTERMDrainsCallsInFlight(t *testing.T) {
	p := startBinary(t, "--conformance")
	const n = 3
	type inflight struct {
		sid    string
		resp   *http.Response
		events func(func(string) bool)
		req    map[string]any
	}
	calls := make([]*inflight, n)
	for i := range calls {
		c := &inflight{sid: initialize(t, p.url)}
		c.resp = rpc(t, p.url, c.sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": fmt.Sprint("prompt ", i)}}})
		next, stop := iter.Pull(dataLines(c.resp.Body))
		defer stop()
		d, ok := next()
		if !ok {
			t.Fatalf("call %d: stream ended", i)
		}
		json.Unmarshal([]byte(d), &c.req)
		if c.req["method"] != "sampling/createMessage" {
			t.Fatalf("call %d: got %s, want a sampling request", i, d)
		}
		c.events = func(yield func(string) bool) {
			for {
				d, ok := next()
				if !ok || !yield(d) {
					return
				}
			}
		}
		calls[i] = c
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		resp := rpc(t, p.url, c.sid, map[string]any{"jsonrpc": "2.0", "id": c.req["id"], "result": map[string]any{
			"role": "assistant", "content": map[string]any{"type": "text", "text": fmt.Sprint("answer ", i)}, "model": "m"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("reply %d during the drain: %d", i, resp.StatusCode)
		}
		got := ""
		for d := range c.events {
			got = d
		}
		c.resp.Body.Close()
		if !strings.Contains(got, fmt.Sprint("LLM response: answer ", i)) {
			t.Errorf("call %d ended with %s", i, got)
		}
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, p.logs())
		}
	case <-time.After(failsafe):
		t.Fatalf("did not exit:\n%s", p.logs())
	}
	if !strings.Contains(p.logs(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the logs:\n%s", p.logs())
	}
}

// TestBinaryServesSessionsAndHealth checks the binary end to end: health,
// a session's plan, DELETE, and that a foreign Origin is refused.
func TestBinaryServesSessionsAndHealth(t *testing.T) {
	p := startBinary(t)
	health := strings.TrimSuffix(p.url, "/mcp") + "/healthz"
	resp, err := http.Get(health)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	sid := initialize(t, p.url)
	resp = rpc(t, p.url, sid, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "e2e"}}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Objective: e2e") {
		t.Fatalf("setup: %s", body)
	}
	req, _ := http.NewRequest(http.MethodPost, p.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodDelete, p.url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.exited; err != nil {
		t.Errorf("exit: %v", err)
	}
}
