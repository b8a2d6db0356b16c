package console_test

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/console"
	"github.com/wink-mcp/wink-mcp/history"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/internal/webtest"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// fixture is a server with the planning, workspace and history sections
// on a memory store, and its console behind a test HTTP server, where the
// token "alice-token" is alice's and "bob-token" bob's.
type fixture struct {
	srv *server.Server
	url string
}

var tokens = map[string]identity.Identity{"alice-token": {Subject: "alice"}, "bob-token": {Subject: "bob"}}

func verify(_ context.Context, token string) (identity.Identity, error) {
	for t, id := range tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return id, nil
		}
	}
	return identity.Identity{}, errors.New("invalid token")
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, consent.Config{})
}

// newFixtureWith is newFixture with the consent stage of cfg, whose
// questions no client can ask wait for the console.
func newFixtureWith(t *testing.T, cfg consent.Config) *fixture {
	t.Helper()
	b, err := workspace.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := sections.NewTree(planning.New(planning.React), workspace.New(b, workspace.Options{}), history.New())
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory(store.Options{})
	asks, err := consent.New(cfg, tree.Tools(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := server.Options{Name: "test", Version: "1", Tree: tree, Store: st, History: 20, Setup: asks.Setup}
	if asks != nil {
		opts.Consent = asks
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	asks.SetDesk(func(ctx context.Context, call *tools.Call, message string) (bool, error) {
		who, _ := identity.From(ctx)
		return srv.Sessions().Ask(ctx, who.Principal(), sessions.Question{Session: call.Session.ID(), Tool: call.Tool.Name(), Message: message})
	})
	c, err := console.New(console.Options{Server: srv, Store: st, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)
	return &fixture{srv: srv, url: hs.URL}
}

// call makes a tool call as who, in session h ("" for a new one), and
// returns the result's text and its session; an error result fails the
// test.
func (f *fixture) call(t *testing.T, who identity.Identity, h, tool string, args map[string]any) (string, string) {
	t.Helper()
	text, s, isError := f.try(who, h, tool, args)
	if isError {
		t.Fatalf("%s: %s", tool, text)
	}
	return text, s
}

// try makes a tool call as call does, and says whether its result is an
// error.
func (f *fixture) try(who identity.Identity, h, tool string, args map[string]any) (string, string, bool) {
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
	}
	if h != "" {
		meta[server.MetaSession] = h
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args, "_meta": meta}})
	resp, _ := json.Marshal(server.HandleMessage(identity.With(context.Background(), who), f.srv.MCP(), msg))
	var out struct {
		Result struct {
			Content           []struct{ Text string }
			StructuredContent map[string]any
			IsError           bool
		}
	}
	if err := json.Unmarshal(resp, &out); err != nil || len(out.Result.Content) == 0 {
		return string(resp), "", true
	}
	s, _ := out.Result.StructuredContent["session"].(string)
	return out.Result.Content[0].Text, s, out.Result.IsError
}

// TestConsole: alice opens the console with her token, once; sees her
// session's objective and its calls, not bob's, at URLs that name the
// session by its log identifier, never printing its handle; undoes a call from the
// session's page and finds the file gone; ends the session.
func TestConsole(t *testing.T) {
	f := newFixture(t)
	alice, bob := tokens["alice-token"], tokens["bob-token"]
	_, h := f.call(t, alice, "", "planning_setup_plan", map[string]any{"objective": "Ship the greeting", "initial_steps": []string{"write it"}})
	f.call(t, alice, h, "write_file", map[string]any{"file_path": "hello.txt", "content": "hello\n"})
	_, hb := f.call(t, bob, "", "planning_setup_plan", map[string]any{"objective": "Bob's secret plan"})

	c := webtest.Browser(t)
	code, page := webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h)+"?token=alice-token")
	if code != http.StatusOK || !strings.Contains(page, "Ship the greeting") || !strings.Contains(page, "write_file") || !strings.Contains(page, "hello.txt") {
		t.Fatalf("alice's session page: %d\n%s", code, page)
	}
	code, page = webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h)+"/changes/2?part=1")
	if code != http.StatusOK || !strings.Contains(page, "added <code>hello.txt</code>") || !strings.Contains(page, `<span class="add">&#43;hello</span>`) {
		t.Fatalf("the diff of write_file: %d\n%s", code, page)
	}
	code, page = webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h)+"/changes/1")
	if code != http.StatusOK || !strings.Contains(page, "planning.plan") || !strings.Contains(page, "Ship the greeting") {
		t.Fatalf("the diff of planning_setup_plan: %d\n%s", code, page)
	}
	if code, _ = webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h)+"/changes/99"); code != http.StatusNotFound {
		t.Fatalf("a change the history does not keep: %d", code)
	}
	code, page = webtest.Get(t, c, f.url+"/console")
	if code != http.StatusOK || !strings.Contains(page, "Ship the greeting") || strings.Contains(page, "Bob") || strings.Contains(page, hb) {
		t.Fatalf("alice's sessions page: %d\n%s", code, page)
	}
	if code, page = webtest.Get(t, c, f.url+"/console/s/"+session.LogID(hb)); code != http.StatusNotFound || strings.Contains(page, "Bob") {
		t.Fatalf("bob's session, for alice: %d\n%s", code, page)
	}
	for _, u := range []string{"/console", "/console/s/" + session.LogID(h), "/console/s/" + session.LogID(h) + "/changes/2"} {
		if _, page := webtest.Get(t, c, f.url+u); strings.Contains(page, h) {
			t.Fatalf("%s prints the session's handle:\n%s", u, page)
		}
	}
	if code, _ = webtest.Get(t, c, f.url+"/console/s/"+h); code != http.StatusNotFound {
		t.Fatalf("a session named by its handle: %d, want 404: pages name sessions by log identifier", code)
	}

	undo := func(origin string) (int, string) {
		return webtest.Post(t, c, f.url+"/console/s/"+session.LogID(h)+"/undo", origin, url.Values{"steps": {"1"}})
	}
	if code, _ := undo("https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("an undo from another origin: %d", code)
	}
	if code, page := undo(f.url); code != http.StatusOK || !strings.Contains(page, "hello.txt") || !strings.Contains(page, "undone") {
		t.Fatalf("undo: %d\n%s", code, page)
	}
	if text, _ := f.call(t, alice, h, "ls", map[string]any{}); strings.Contains(text, "hello.txt") {
		t.Fatalf("after the undo, the workspace: %s", text)
	}

	webtest.Post(t, c, f.url+"/console/s/"+session.LogID(h)+"/end", f.url, nil)
	if code, page = webtest.Get(t, c, f.url+"/console"); strings.Contains(page, "Ship the greeting") {
		t.Fatalf("the sessions page after the end: %d\n%s", code, page)
	}
}

// TestConsoleRefuses: without a token, with a wrong one, the console
// answers 401 and nothing of any session; a link with a token sets an
// HttpOnly, SameSite=Strict cookie and sends the browser to the URL
// without the token.
func TestConsoleRefuses(t *testing.T) {
	f := newFixture(t)
	_, h := f.call(t, tokens["alice-token"], "", "planning_setup_plan", map[string]any{"objective": "Private objective"})
	for name, u := range map[string]string{
		"no token":    f.url + "/console",
		"wrong token": f.url + "/console?token=nope",
		"session":     f.url + "/console/s/" + session.LogID(h),
		"events":      f.url + "/console/events",
	} {
		code, page := webtest.Get(t, webtest.Browser(t), u)
		if code != http.StatusUnauthorized || strings.Contains(page, "Private objective") {
			t.Errorf("%s: %d\n%s", name, code, page)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, f.url+"/console/s/"+session.LogID(h)+"?token=alice-token&x=1", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/s/"+session.LogID(h)+"?x=1" ||
		len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value != "alice-token" {
		t.Fatalf("a link with a token: %d, Location %q, cookies %+v", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
}

// TestConsoleConsent: with consent.fallback console, a call of rm from a
// client that cannot ask waits; the question shows in the console, and
// the answer given there lets the call run, or not.
func TestConsoleConsent(t *testing.T) {
	f := newFixtureWith(t, consent.Config{Enabled: true, Tools: []string{"rm"}, Fallback: consent.Console})
	alice := tokens["alice-token"]
	_, h := f.call(t, alice, "", "write_file", map[string]any{"file_path": "a.txt", "content": "a\n"})
	f.call(t, alice, h, "write_file", map[string]any{"file_path": "b.txt", "content": "b\n"})
	c := webtest.Browser(t)
	if code, _ := webtest.Get(t, c, f.url+"/console?token=alice-token"); code != http.StatusOK {
		t.Fatalf("opening the console: %d", code)
	}
	for _, tc := range []struct {
		answer, file, decision string
		removed                bool
	}{{"decline", "a.txt", consent.DeclinedInConsole, false}, {"accept", "b.txt", consent.AcceptedInConsole, true}} {
		type res struct {
			text    string
			isError bool
		}
		done := make(chan res, 1)
		go func() {
			text, _, isError := f.try(alice, h, "rm", map[string]any{"path": tc.file})
			done <- res{text, isError}
		}()
		var id string
		re := regexp.MustCompile(`/console/q/([A-Z2-7]+)/accept`)
		for end := time.Now().Add(10 * time.Second); id == ""; time.Sleep(20 * time.Millisecond) {
			_, page := webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h))
			if m := re.FindStringSubmatch(page); m != nil && strings.Contains(page, tc.file) {
				id = m[1]
			}
			if time.Now().After(end) {
				t.Fatalf("%s: the question does not show:\n%s", tc.file, page)
			}
		}
		webtest.Post(t, c, f.url+"/console/q/"+id+"/"+tc.answer, f.url, url.Values{"session": {session.LogID(h)}})
		r := <-done
		ls, _ := f.call(t, alice, h, "ls", map[string]any{})
		if r.isError == tc.removed || strings.Contains(ls, tc.file) == tc.removed {
			t.Errorf("%s after %s: %q (error %v); ls: %s", tc.file, tc.answer, r.text, r.isError, ls)
		}
		if _, page := webtest.Get(t, c, f.url+"/console/s/"+session.LogID(h)); !strings.Contains(page, "(consent: "+tc.decision+")") {
			t.Errorf("%s: the call log does not show the decision %q:\n%s", tc.file, tc.decision, page)
		}
	}
}

// TestConsoleEvents: a session's page hears of each call of its session,
// one that changed nothing too, and the sessions page of each commit, by
// the session's log identifier, never its handle.
func TestConsoleEvents(t *testing.T) {
	f := newFixture(t)
	alice := tokens["alice-token"]
	_, h := f.call(t, alice, "", "planning_setup_plan", map[string]any{"objective": "Watched"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/console/events?session="+session.LogID(h), nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	defer cancel() // first: the stream ends, and the server's handler with it
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	await := func(what string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s: the stream ended", what)
				}
				if strings.Contains(l, h) {
					t.Fatalf("%s: the stream names the handle: %q", what, l)
				}
				if l == "data: "+session.LogID(h) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("%s: no event", what)
			}
		}
	}
	time.Sleep(1500 * time.Millisecond) // the stream has read the last call once
	f.call(t, alice, h, "planning_read_plan", map[string]any{})
	await("a call that changed nothing")
	f.call(t, alice, h, "planning_add_step", map[string]any{"steps": []string{"more"}})
	await("a commit")
}
