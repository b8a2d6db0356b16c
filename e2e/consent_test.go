package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// consentConfig writes a configuration that turns the consent stage on,
// with "allow for this session" offered and an audit file, and returns
// its path and the audit file's.
func consentConfig(t *testing.T) (cfg, audit string) {
	t.Helper()
	dir := t.TempDir()
	cfg, audit = filepath.Join(dir, "wink.yaml"), filepath.Join(dir, "audit.jsonl")
	yaml := fmt.Sprintf("consent:\n  enabled: true\n  remember: true\nhooks:\n  audit:\n    file: %s\n    fsync: always\n", audit)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, audit
}

// consentWorkspace returns a workspace directory holding a.txt and b.txt.
func consentWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exists reports whether the workspace dir holds name.
func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// auditConsent returns the tool and consent decision of each record of the
// audit file, in order.
func auditConsent(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct{ Tool, Consent string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Tool+":"+rec.Consent)
	}
	return out
}

// message is a stdout frame read whole: a response, or a request of the
// server's.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// mrtr is a tools/call result as a client of either era reads it.
type mrtr struct {
	result
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// exchange sends the tools/call request id over stdio and reads stdout
// until its response. Each elicitation the server asks on the way is
// answered with answer's reply and its message kept.
func exchange(t *testing.T, p *proc, id int, params map[string]any, answer func(question string) map[string]any) (mrtr, []string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	p.mustSend(string(b))
	var asked []string
	for {
		line, ok := p.next()
		if !ok {
			t.Fatalf("no response to call %d; stderr:\n%s", id, p.stderr)
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Method == "elicitation/create":
			asked = append(asked, m.Params.Message)
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": answer(m.Params.Message)})
			p.mustSend(string(reply))
		case m.Method == "" && compactJSON(m.ID) == fmt.Sprint(id):
			var r mrtr
			if err := json.Unmarshal(m.Result, &r); err != nil {
				t.Fatalf("call %d: %s", id, line)
			}
			return r, asked
		}
	}
}

// reply is the answer of a user who takes action (and, accepting, allows
// the tool for the session when remember is set).
func reply(action string, remember bool) map[string]any {
	r := map[string]any{"action": action}
	if action == "accept" {
		r["content"] = map[string]any{"remember": remember}
	}
	return r
}

// TestConsentLegacyStdio: over stdio, a client of the 2025-11-25 era that
// declared elicitation is asked before rm runs, with its arguments shown.
// Declined or cancelled, the file stays and the result says so; accepted
// for the session, rm runs, and the next rm runs without a question. Each
// decision is in the audit file. A client without the capability is
// denied (the default fallback) without a question.
func TestConsentLegacyStdio(t *testing.T) {
	cfg, audit := consentConfig(t)
	dir := consentWorkspace(t)
	p := start(t, "", "--workspace", dir, "--store", "memory", "--config", cfg)
	p.mustSend(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"wink-e2e","version":"1"}}}`)
	if _, ok := p.await("0"); !ok {
		t.Fatalf("initialize: %s", p.stderr)
	}
	p.mustSend(initializedNotification)
	rm := func(path string) map[string]any {
		return map[string]any{"name": "rm", "arguments": map[string]any{"path": path}}
	}

	r, asked := exchange(t, p, 1, rm("a.txt"), func(string) map[string]any { return reply("decline", false) })
	if !r.IsError || r.text() != "The user declined 'rm': it did not run, and nothing changed." || !exists(dir, "a.txt") {
		t.Errorf("declined: %+v", r)
	}
	if len(asked) != 1 || asked[0] != "Allow the tool 'rm' to run with these arguments?\n{\"path\":\"a.txt\"}" {
		t.Errorf("asked %q", asked)
	}
	r, _ = exchange(t, p, 2, rm("a.txt"), func(string) map[string]any { return reply("cancel", false) })
	if !r.IsError || r.text() != "The user cancelled 'rm': it did not run, and nothing changed." || !exists(dir, "a.txt") {
		t.Errorf("cancelled: %+v", r)
	}
	r, _ = exchange(t, p, 3, rm("a.txt"), func(string) map[string]any { return reply("accept", true) })
	if r.IsError || exists(dir, "a.txt") {
		t.Errorf("accepted: %+v", r)
	}
	r, asked = exchange(t, p, 4, rm("b.txt"), func(string) map[string]any { return reply("decline", false) })
	if r.IsError || len(asked) != 0 || exists(dir, "b.txt") {
		t.Errorf("remembered: %+v, asked %q", r, asked)
	}
	want := []string{"rm:declined", "rm:cancelled", "rm:accepted for the session", "rm:remembered for the session"}
	if got := auditConsent(t, audit); !slices.Equal(got, want) {
		t.Errorf("audit %q, want %q", got, want)
	}

	mute := start(t, "", "--workspace", consentWorkspace(t), "--store", "memory", "--config", cfg)
	mute.initialize()
	r, asked = exchange(t, mute, 1, rm("a.txt"), func(string) map[string]any { return reply("accept", false) })
	if !r.IsError || len(asked) != 0 || !strings.Contains(r.text(), "this client cannot ask for it") {
		t.Errorf("no capability: %+v, asked %q", r, asked)
	}
}

// TestConsentModernStdio: a client of the 2026-07-28 era is answered
// input_required with the question and a requestState; it retries rm with
// the user's answer. Declined, the file stays; accepted, rm runs. A retry
// with a forged state is refused, and changes nothing.
func TestConsentModernStdio(t *testing.T) {
	cfg, audit := consentConfig(t)
	dir := consentWorkspace(t)
	p := start(t, "", "--workspace", dir, "--store", "memory", "--config", cfg)
	meta := modernMeta()
	meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"elicitation": map[string]any{}}
	call := map[string]any{"name": "rm", "arguments": map[string]any{"path": "a.txt"}, "_meta": meta}
	retry := func(state string, answer map[string]any) map[string]any {
		r := map[string]any{"requestState": state, "inputResponses": map[string]any{"wink-1": answer}}
		for k, v := range call {
			r[k] = v
		}
		return r
	}
	never := func(q string) map[string]any {
		t.Fatalf("a server→client request to a modern client: %s", q)
		return nil
	}

	id := 0
	ask := func() mrtr {
		t.Helper()
		id++
		r, _ := exchange(t, p, id, call, never)
		var q message
		if err := json.Unmarshal(r.InputRequests["wink-1"], &q); err != nil || r.ResultType != "input_required" || q.Method != "elicitation/create" ||
			q.Params.Message != "Allow the tool 'rm' to run with these arguments?\n{\"path\":\"a.txt\"}" || r.RequestState == "" {
			t.Fatalf("first round: %+v", r)
		}
		return r
	}

	first := ask()
	id++
	r, _ := exchange(t, p, id, retry(first.RequestState, reply("decline", false)), never)
	if !r.IsError || r.ResultType != "complete" || r.text() != "The user declined 'rm': it did not run, and nothing changed." || !exists(dir, "a.txt") {
		t.Errorf("declined: %+v", r)
	}
	id++
	r, _ = exchange(t, p, id, retry(first.RequestState[:len(first.RequestState)-4]+"AAAA", reply("accept", false)), never)
	if !r.IsError || !strings.HasPrefix(r.text(), "invalid requestState: this server did not issue it") || !exists(dir, "a.txt") {
		t.Errorf("forged: %+v", r)
	}
	second := ask()
	id++
	r, _ = exchange(t, p, id, retry(second.RequestState, reply("accept", false)), never)
	if r.IsError || r.ResultType != "complete" || exists(dir, "a.txt") {
		t.Errorf("accepted: %+v", r)
	}
	want := []string{"rm:", "rm:declined", "rm:", "rm:accepted"}
	if got := auditConsent(t, audit); !slices.Equal(got, want) {
		t.Errorf("audit %q, want %q", got, want)
	}
}

// TestConsentGoSDK: the official Go SDK's client in its default mode
// (2026-07-28), over stdio and HTTP, answers the consent question through
// its elicitation handler: it gets input_required and retries rm with the
// user's answer itself. Declined or cancelled, the file stays; accepted,
// rm runs.
func TestConsentGoSDK(t *testing.T) {
	cfg, _ := consentConfig(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			dir := consentWorkspace(t)
			var action atomic.Value
			var asked atomic.Int32
			client := mcp.NewClient(&mcp.Implementation{Name: "wink-e2e-sdk", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if req.Params.Message != "Allow the tool 'rm' to run with these arguments?\n{\"path\":\"a.txt\"}" {
						return nil, fmt.Errorf("asked %q", req.Params.Message)
					}
					res := &mcp.ElicitResult{Action: action.Load().(string)}
					if res.Action == "accept" {
						res.Content = map[string]any{"remember": false}
					}
					return res, nil
				},
			})
			var tr mcp.Transport
			if transport == "stdio" {
				cmd := exec.Command(binary, "--workspace", dir, "--store", "memory", "--config", cfg)
				cmd.Dir = t.TempDir()
				tr = &mcp.CommandTransport{Command: cmd}
			} else {
				s := serveHTTP(t, "--workspace", dir, "--store", "memory", "--config", cfg)
				tr = &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}
			}
			cs, err := client.Connect(t.Context(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("protocol %s", v)
			}
			c := sdkClient{cs}
			for _, tc := range []struct{ action, want string }{
				{"decline", "The user declined 'rm': it did not run, and nothing changed."},
				{"cancel", "The user cancelled 'rm': it did not run, and nothing changed."},
				{"accept", ""},
			} {
				action.Store(tc.action)
				before := asked.Load()
				r := c.call(t, "rm", map[string]any{"path": "a.txt"})
				if asked.Load() != before+1 || r.IsError != (tc.want != "") || tc.want != "" && r.text() != tc.want || exists(dir, "a.txt") != (tc.want != "") {
					t.Errorf("%s: %+v, asked %d times", tc.action, r, asked.Load()-before)
				}
			}
		})
	}
}

// TestConsentAcrossReplicas: over HTTP, a client of the 2026-07-28 era
// asked for consent by one process may retry on another that shares
// http.request_state_key_file; a process with a key of its own refuses the
// state.
func TestConsentAcrossReplicas(t *testing.T) {
	cfg, _ := consentConfig(t)
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(t.TempDir(), "shared.yaml")
	if err := os.WriteFile(shared, append(yaml, "http:\n  request_state_key_file: "+key+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, state := consentWorkspace(t), t.TempDir()
	serve := func(cfg string) *httpClient {
		return &httpClient{url: serveHTTP(t, "--workspace", dir, "--state-dir", state, "--store", "memory", "--config", cfg).url}
	}
	a, b, other := serve(shared), serve(shared), serve(cfg)
	meta := modernMeta()
	meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"elicitation": map[string]any{}}
	call := func(c *httpClient, extra map[string]any) mrtr {
		t.Helper()
		params := map[string]any{"name": "rm", "arguments": map[string]any{"path": "a.txt"}, "_meta": meta}
		for k, v := range extra {
			params[k] = v
		}
		var r mrtr
		if err := json.Unmarshal(c.post(t, "tools/call", "rm", params), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := call(a, nil)
	if first.ResultType != "input_required" {
		t.Fatalf("first round: %+v", first)
	}
	answer := map[string]any{"requestState": first.RequestState, "inputResponses": map[string]any{"wink-1": reply("accept", false)}}
	if r := call(other, answer); !r.IsError || !strings.HasPrefix(r.text(), "invalid requestState: this server did not issue it") || !exists(dir, "a.txt") {
		t.Errorf("another key: %+v", r)
	}
	if r := call(b, answer); r.IsError || r.ResultType != "complete" || exists(dir, "a.txt") {
		t.Errorf("the shared key: %+v", r)
	}
}
