package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sessions named by handles, over the built binary: a client of the
// 2026-07-28 era, which has no protocol session, keeps a plan and a
// workspace across calls by passing the handle the first result names; a
// legacy client keeps them without, in its connection's session; bad
// handles get one error result and the server serves on.

// The answers to a bad handle and to a read without a session.
const (
	unknownSession  = "Unknown session; start a new one by calling without 'session'."
	tooManySessions = "Too many sessions: this client holds as many as the server allows. Continue one by passing 'session' with the handle from the 'Session:' line of an earlier result, or end one; an idle session ends by itself after the session TTL."
	noSession       = "No session to read: pass 'session' with the handle from the 'Session:' line of an earlier result, or start a session with a call that changes state."
)

// modernMeta is the _meta every request of the 2026-07-28 era carries.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "wink-e2e", "version": "1"},
	}
}

// result is a tools/call result as these tests read it.
type result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

// text returns the first text block.
func (r result) text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// session returns the handle of the structured content, after checking
// that the text's last line names the same one.
func (r result) session(t testing.TB) string {
	t.Helper()
	h, _ := r.StructuredContent["session"].(string)
	if h == "" || !strings.HasSuffix(r.text(), "\n\nSession: "+h) {
		t.Fatalf("the result names no session, or two: %+v", r)
	}
	return h
}

// caller calls a tool as one client: raw frames over stdio or HTTP, or the
// official Go SDK.
type caller interface {
	call(t testing.TB, tool string, args map[string]any) result
}

// with returns args with the session argument set to h.
func with(h string, args map[string]any) map[string]any {
	out := map[string]any{"session": h}
	for k, v := range args {
		out[k] = v
	}
	return out
}

// keepState walks a client through a plan and a file, passing the handle
// the first call returns on every later call (on no later call when
// implicit): the plan, the file and the read-before-write memory of the
// session are there on each call.
func keepState(t *testing.T, c caller, implicit bool) string {
	t.Helper()
	r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}})
	if r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	h := r.session(t)
	pass := func(args map[string]any) map[string]any {
		if implicit {
			return args
		}
		return with(h, args)
	}
	check := func(tool string, args map[string]any, want string) result {
		t.Helper()
		r := c.call(t, tool, pass(args))
		if r.IsError || !strings.Contains(r.text(), want) {
			t.Fatalf("%s %v: %+v", tool, args, r)
		}
		return r
	}
	for _, step := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"planning_add_step", map[string]any{"steps": []string{"review"}}, "2 [pending] review"},
		{"planning_update_step", map[string]any{"step_id": 1, "status": "in_progress"}, "1 [in_progress] draft"},
		{"write_file", map[string]any{"file_path": "notes.md", "content": "hello\n"}, "Created notes.md"},
		{"edit_file", map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"}, "Replaced 1 occurrence"},
	} {
		if got := check(step.tool, step.args, step.want).session(t); got != h {
			t.Fatalf("%s named session %s, want %s", step.tool, got, h)
		}
	}
	check("read_file", map[string]any{"file_path": "notes.md"}, "1 | bye")
	check("planning_read_plan", map[string]any{}, "Objective: Ship it\nStatus: active\n\n1 [in_progress] draft\n2 [pending] review")
	return h
}

// badHandles checks that a handle of the wrong shape, and one never
// minted, get the unknown-session answer on a call that changes state and
// on a read, that nothing is created under them, and that the server
// serves on.
func badHandles(t *testing.T, c caller) {
	t.Helper()
	for _, h := range []string{"not a handle!", "s_AAAAAAAAAAAAAAAAAAAAAAAAAA", strings.Repeat("s", 300)} {
		for i := range 2 { // the second time, too: nothing was created
			for tool, args := range map[string]map[string]any{
				"planning_setup_plan": {"objective": "theirs"},
				"planning_read_plan":  {},
			} {
				if r := c.call(t, tool, with(h, args)); !r.IsError || r.text() != unknownSession {
					t.Errorf("%s with %.20q (%d): %+v", tool, h, i, r)
				}
			}
		}
	}
}

// stdioClient calls tools over the stdio of a process, with raw frames.
type stdioClient struct {
	p      *proc
	id     int
	modern bool
}

func (c *stdioClient) call(t testing.TB, tool string, args map[string]any) result {
	t.Helper()
	c.id++
	params := map[string]any{"name": tool, "arguments": args}
	if c.modern {
		params["_meta"] = modernMeta()
	}
	f := c.p.call(c.id, "tools/call", params)
	if f.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", tool, f.Error.Code, f.Error.Message)
	}
	var r result
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHandlesOverStdio: a 2026-07-28 client over stdio, without
// initialize, keeps its plan and workspace by handle, and without it (the
// process is its session); wink://session holds the handle; --session
// names it; a legacy client is served as before.
func TestHandlesOverStdio(t *testing.T) {
	t.Run("modern", func(t *testing.T) {
		p := start(t, "")
		c := &stdioClient{p: p, modern: true}
		h := keepState(t, c, false)
		if r := c.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "1 [in_progress] draft") {
			t.Errorf("the process's session, without the handle: %+v", r)
		}
		badHandles(t, c)
		f := p.call(100, "resources/read", map[string]any{"uri": "wink://session", "_meta": modernMeta()})
		if !strings.Contains(string(f.Result), `"text":"`+h+`"`) {
			t.Errorf("wink://session: %s", f.Result)
		}
		p.closeStdin()
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, p.stderr)
		}
		checkStderr(t, p.stderr.String())
	})
	t.Run("implicit", func(t *testing.T) {
		c := &stdioClient{p: start(t, ""), modern: true}
		keepState(t, c, true)
	})
	t.Run("legacy", func(t *testing.T) {
		p := start(t, "")
		p.initialize()
		keepState(t, &stdioClient{p: p}, true)
	})
	t.Run("named", func(t *testing.T) {
		c := &stdioClient{p: start(t, "", "--session", "desk-1"), modern: true}
		if h := keepState(t, c, false); h != "desk-1" {
			t.Errorf("session %q, want desk-1", h)
		}
	})
}

// server is a wink-mcp process serving HTTP.
type server struct {
	p   *proc
	url string // the MCP endpoint
}

// serveHTTP starts the binary serving HTTP on a free loopback port.
func serveHTTP(t *testing.T, args ...string) *server {
	t.Helper()
	p := start(t, "", append([]string{"--http", "127.0.0.1:0"}, args...)...)
	re := regexp.MustCompile(`msg="serving MCP over HTTP".* addr=(\S+)`)
	for range 500 {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return &server{p: p, url: "http://" + m[1] + "/mcp"}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the server did not start; stderr:\n%s", p.stderr)
	return nil
}

// stopServers stops each server with SIGTERM and checks that it exited 0
// with a clean stderr.
func stopServers(t *testing.T, servers ...*server) {
	t.Helper()
	for _, s := range servers {
		s.p.signal(syscall.SIGTERM)
		if code := s.p.wait(); code != 0 {
			t.Errorf("exit code %d; stderr:\n%s", code, s.p.stderr)
		}
		checkStderr(t, s.p.stderr.String())
	}
}

// httpClient calls tools over HTTP with raw frames: of the 2026-07-28 era
// when sid is empty, else in the legacy session sid.
type httpClient struct {
	url, token, sid string
}

// post sends one request and returns its JSON-RPC result; the test fails
// if there is none.
func (c *httpClient) post(t testing.TB, method, name string, params map[string]any) json.RawMessage {
	t.Helper()
	res, err := c.send(method, name, params)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// errNoAnswer wraps the error of a request that got no complete answer:
// the server could not be reached, or went away before it answered.
var errNoAnswer = errors.New("no answer")

// send sends one request and returns its JSON-RPC result, from a JSON body
// or the last data line of an SSE stream. Its error wraps errNoAnswer when
// no complete response arrived.
func (c *httpClient) send(method, name string, params map[string]any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	} else if method != "initialize" {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %v", method, name, errNoAnswer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, name, resp.StatusCode, data)
	}
	if c.sid == "" && method == "initialize" {
		c.sid = resp.Header.Get("Mcp-Session-Id")
	}
	var last []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(data, []byte(`"id"`)) {
				last = bytes.Clone(data)
			}
		}
		err = sc.Err()
	} else {
		last, err = io.ReadAll(resp.Body)
	}
	if err != nil || len(last) == 0 {
		return nil, fmt.Errorf("%s %s: %w: %v", method, name, errNoAnswer, err)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(last, &msg); err != nil || msg.Error != nil {
		return nil, fmt.Errorf("%s %s: %s", method, name, last)
	}
	return msg.Result, nil
}

func (c *httpClient) call(t testing.TB, tool string, args map[string]any) result {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if c.sid == "" {
		params["_meta"] = modernMeta()
	}
	var r result
	if err := json.Unmarshal(c.post(t, "tools/call", tool, params), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// initialize opens a legacy session.
func (c *httpClient) initialize(t testing.TB) {
	t.Helper()
	c.post(t, "initialize", "", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "wink-e2e", "version": "1"}})
	if c.sid == "" {
		t.Fatal("initialize gave no Mcp-Session-Id")
	}
	body := strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequest(http.MethodPost, c.url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestHandlesOverHTTP: a 2026-07-28 client over HTTP starts a session with
// its first call that changes state and keeps its plan and workspace by
// the handle; without it a read is refused and a change starts another
// session; a legacy client is served as before, in its protocol session.
func TestHandlesOverHTTP(t *testing.T) {
	s := serveHTTP(t)
	t.Run("modern", func(t *testing.T) {
		c := &httpClient{url: s.url}
		h := keepState(t, c, false)
		if r := c.call(t, "planning_read_plan", map[string]any{}); !r.IsError || r.text() != noSession {
			t.Errorf("a read without a handle: %+v", r)
		}
		if r := c.call(t, "read_file", map[string]any{"file_path": "notes.md"}); !r.IsError || r.text() != noSession {
			t.Errorf("a file read without a handle: %+v", r)
		}
		other := c.call(t, "planning_setup_plan", map[string]any{"objective": "Another"})
		if other.IsError || other.session(t) == h {
			t.Errorf("a call without a handle: %+v", other)
		}
		var res struct{ Contents []struct{ Text string } }
		meta := modernMeta()
		meta["io.github.wink-mcp/session"] = h
		_ = json.Unmarshal(c.post(t, "resources/read", "wink://workspace/files/notes.md", map[string]any{"uri": "wink://workspace/files/notes.md", "_meta": meta}), &res)
		if len(res.Contents) != 1 || res.Contents[0].Text != "bye\n" {
			t.Errorf("the session's file as a resource, by _meta: %+v", res)
		}
		badHandles(t, c)
	})
	t.Run("legacy", func(t *testing.T) {
		c := &httpClient{url: s.url}
		c.initialize(t)
		h := keepState(t, c, true)
		var res struct{ Contents []struct{ Text string } }
		_ = json.Unmarshal(c.post(t, "resources/read", "", map[string]any{"uri": "wink://session"}), &res)
		if len(res.Contents) != 1 || res.Contents[0].Text != h {
			t.Errorf("wink://session: %+v, want %s", res, h)
		}
		// Its handle continues the session from a client without one.
		modern := &httpClient{url: s.url}
		if r := modern.call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "1 [in_progress] draft") {
			t.Errorf("the legacy session by its handle: %+v", r)
		}
	})
}

// TestForeignHandle: with bearer tokens, a session is bound to the token
// that started it; another token presenting the handle gets the
// unknown-session answer, and the owner carries on.
func TestForeignHandle(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("token-of-alice\ntoken-of-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--bearer-token-file", tokens)
	alice, bob := &httpClient{url: s.url, token: "token-of-alice"}, &httpClient{url: s.url, token: "token-of-bob"}
	h := keepState(t, alice, false)
	for tool, args := range map[string]map[string]any{
		"planning_read_plan":   {},
		"planning_update_step": {"step_id": 1, "status": "done"},
		"read_file":            {"file_path": "notes.md"},
		"write_file":           {"file_path": "notes.md", "content": "bob was here", "overwrite": true},
	} {
		if r := bob.call(t, tool, with(h, args)); !r.IsError || r.text() != unknownSession {
			t.Errorf("bob, %s: %+v", tool, r)
		}
	}
	if r := alice.call(t, "read_file", with(h, map[string]any{"file_path": "notes.md"})); r.IsError || !strings.Contains(r.text(), "1 | bye") {
		t.Errorf("alice after bob: %+v", r)
	}
	keepState(t, bob, false) // bob has sessions of his own
}

// TestExpiredHandle: a session idle longer than --session-ttl is gone: its
// handle gets the unknown-session answer, which creates nothing.
func TestExpiredHandle(t *testing.T) {
	s := serveHTTP(t, "--session-ttl", "1s")
	c := &httpClient{url: s.url}
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "brief"}).session(t)
	time.Sleep(1500 * time.Millisecond)
	for i := range 2 {
		if r := c.call(t, "planning_add_step", with(h, map[string]any{"steps": []string{"late"}})); !r.IsError || r.text() != unknownSession {
			t.Errorf("expired handle (%d): %+v", i, r)
		}
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "again"}); r.IsError || r.session(t) == h {
		t.Errorf("a new session: %+v", r)
	}
}

// TestSessionsPerPrincipal: with --max-sessions-per-principal 2, a
// client's third new session is refused with a result that says how to
// go on, whether a 2026-07-28 call would start it or a legacy session's
// first call; the client's sessions still serve by their handles, and
// another client is not affected.
func TestSessionsPerPrincipal(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("token-of-alice\ntoken-of-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--bearer-token-file", tokens, "--max-sessions-per-principal", "2")
	alice, bob := &httpClient{url: s.url, token: "token-of-alice"}, &httpClient{url: s.url, token: "token-of-bob"}
	setup := map[string]any{"objective": "one more"}
	var handles []string
	for range 2 {
		handles = append(handles, alice.call(t, "planning_setup_plan", setup).session(t))
	}
	if r := alice.call(t, "planning_setup_plan", setup); !r.IsError || r.text() != tooManySessions {
		t.Errorf("alice's third session: %+v", r)
	}
	legacy := &httpClient{url: s.url, token: "token-of-alice"}
	legacy.initialize(t)
	if r := legacy.call(t, "planning_setup_plan", setup); !r.IsError || r.text() != tooManySessions {
		t.Errorf("alice's legacy session: %+v", r)
	}
	for _, h := range handles {
		if r := alice.call(t, "planning_read_plan", with(h, nil)); r.IsError || !strings.Contains(r.text(), "one more") {
			t.Errorf("alice's session %s: %+v", h, r)
		}
	}
	if r := bob.call(t, "planning_setup_plan", setup); r.IsError {
		t.Errorf("bob: %+v", r)
	}
}
