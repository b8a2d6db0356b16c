package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progressive disclosure over the built binary: with planning.open false,
// the planning section is a summary in the instructions and its tools are
// not listed; a call of one names the section to open; open_section opens
// it for the session, tells the session's clients that the list changed,
// and returns its guidance; the session keeps it open across a restart.

// closedPlanning is the answer to a planning call while the section is
// closed.
const closedPlanning = `Tool 'planning_setup_plan' is in section 'planning', which is closed: call open_section {"section": "planning"} first.`

// closedConfig writes a configuration that closes the planning section
// and returns its path.
func closedConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(path, []byte("planning: {open: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// listed returns the names of a tools/list result.
func listed(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("tools/list: %v: %s", err, raw)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// opened checks the result of open_section {"section": "planning"}.
func opened(t testing.TB, r result) {
	t.Helper()
	if r.IsError || !strings.HasPrefix(r.text(), "Opened section 'planning'; its tools are now listed: planning_setup_plan, planning_add_step, planning_update_step, planning_read_plan.") ||
		!strings.Contains(r.text(), "Start with `planning_setup_plan`") {
		t.Fatalf("open_section: %+v", r)
	}
}

// TestDisclosureOverStdio: a legacy client over stdio, with raw frames,
// sees the closed section's summary and not its tools, is told to open it
// when it calls one, opens it (the list_changed notification comes before
// the result), and then lists and calls its tools; killed and started
// again on the same --session, the process lists them still.
func TestDisclosureOverStdio(t *testing.T) {
	args := []string{"--config", closedConfig(t), "--session", "desk", "--state-dir", t.TempDir(), "--store", "embedded"}
	p := start(t, "", args...)
	p.mustSend(initializeRequest)
	f, ok := p.await("0")
	if !ok || !strings.Contains(string(f.Result), `"tools":{"listChanged":true}`) ||
		!strings.Contains(string(f.Result), `This section is closed: its tools are not listed. Call `+"`open_section`"+` with `) {
		t.Fatalf("initialize: %s", f.Result)
	}
	p.mustSend(initializedNotification)
	c := &stdioClient{p: p, id: 10}
	if got := listed(t, p.call(1, "tools/list", nil).Result); slices.Contains(got, "planning_setup_plan") || !slices.Contains(got, "open_section") || !slices.Contains(got, "read_file") {
		t.Errorf("tools/list of a fresh session: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); !r.IsError || r.text() != closedPlanning {
		t.Errorf("a closed tool: %+v", r)
	}
	seen := len(p.out)
	opened(t, c.call(t, "open_section", map[string]any{"section": "planning"}))
	var methods []string
	for _, line := range p.out[seen:] {
		var fr frame
		_ = json.Unmarshal(line, &fr)
		methods = append(methods, fr.Method)
	}
	if !slices.Equal(methods, []string{"notifications/tools/list_changed", ""}) {
		t.Errorf("frames of the open_section call: %q", methods)
	}
	if got := listed(t, p.call(2, "tools/list", nil).Result); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list once open: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); r.IsError {
		t.Errorf("planning_setup_plan once open: %+v", r)
	}
	p.kill()

	p = start(t, "", args...)
	p.initialize()
	if got := listed(t, p.call(1, "tools/list", nil).Result); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list after the restart: %v", got)
	}
	c = &stdioClient{p: p, id: 10}
	if r := c.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "Objective: Ship it") {
		t.Errorf("the plan after the restart: %+v", r)
	}
}

// listenHTTP opens a 2026-07-28 subscriptions/listen stream for
// tools/list_changed, naming the session h in its _meta, and returns the
// methods of the messages it carries, until stop.
func listenHTTP(t *testing.T, url, h string) (methods <-chan string, stop func()) {
	t.Helper()
	meta := modernMeta()
	meta["io.github.wink-mcp/session"] = h
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"toolsListChanged": true}, "_meta": meta}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				var m struct{ Method string }
				_ = json.Unmarshal(data, &m)
				out <- m.Method
			}
		}
	}()
	return out, cancel
}

// next returns the next method from ch, or "" after a few seconds.
func next(ch <-chan string) string {
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		return ""
	}
}

// TestDisclosureOverHTTP: a 2026-07-28 client over HTTP, with raw frames,
// lists the tools of a fresh session until it names its session in the
// _meta of tools/list; open_section starts the session and opens the
// section; a client listening with the session's handle hears that the
// list changed, and so does a legacy client on its session's standalone
// stream; the section's tools run in the session, and stay open after a
// restart.
func TestDisclosureOverHTTP(t *testing.T) {
	state, cfg := t.TempDir(), closedConfig(t)
	s := serveHTTP(t, "--config", cfg, "--state-dir", state, "--store", "embedded")
	c := &httpClient{url: s.url}
	list := func(h string) []string {
		meta := modernMeta()
		if h != "" {
			meta["io.github.wink-mcp/session"] = h
		}
		return listed(t, c.post(t, "tools/list", "", map[string]any{"_meta": meta}))
	}
	if got := list(""); slices.Contains(got, "planning_setup_plan") || !slices.Contains(got, "open_section") {
		t.Errorf("tools/list without a session: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); !r.IsError || r.text() != closedPlanning {
		t.Errorf("a closed tool: %+v", r)
	}
	r := c.call(t, "open_section", map[string]any{"section": "planning"})
	opened(t, r)
	h := r.session(t)

	methods, stop := listenHTTP(t, s.url, h)
	defer stop()
	if m := next(methods); m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message of the listen stream: %q", m)
	}
	if r := c.call(t, "open_section", with(h, map[string]any{"section": "planning"})); r.IsError || !strings.HasPrefix(r.text(), "Section 'planning' is already open") {
		t.Errorf("open_section again: %+v", r)
	}
	if m := next(methods); m != "notifications/tools/list_changed" {
		t.Errorf("the listener heard %q, want notifications/tools/list_changed", m)
	}
	if got := list(h); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list naming the session: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", with(h, map[string]any{"objective": "Ship it"})); r.IsError {
		t.Errorf("planning_setup_plan in the session: %+v", r)
	}
	stop()

	// A legacy client hears it on its session's standalone stream.
	legacy := &httpClient{url: s.url}
	legacy.initialize(t)
	stream := events(t, s.url, legacy.sid)
	opened(t, legacy.call(t, "open_section", map[string]any{"section": "planning"}))
	for heard := false; !heard; {
		select {
		case data := <-stream:
			heard = strings.Contains(data, `"method":"notifications/tools/list_changed"`)
		case <-time.After(5 * time.Second):
			t.Fatal("the legacy session's stream did not carry tools/list_changed")
		}
	}
	if got := listed(t, legacy.post(t, "tools/list", "", map[string]any{})); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("the legacy session's tools/list: %v", got)
	}
	s.p.kill()

	s = serveHTTP(t, "--config", cfg, "--state-dir", state, "--store", "embedded")
	c = &httpClient{url: s.url}
	if got := list(h); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list naming the session after the restart: %v", got)
	}
	if r := c.call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "Objective: Ship it") {
		t.Errorf("the plan after the restart: %+v", r)
	}
}

// TestDisclosureGoSDK: the official Go SDK's client in its default mode
// (2026-07-28) over stdio, where the process is its session, lists
// open_section and not the closed section's tools, opens the section,
// hears that the list changed, and then lists and calls its tools.
func TestDisclosureGoSDK(t *testing.T) {
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "wink-e2e-sdk", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cmd := exec.Command(binary, "--config", closedConfig(t), "--state-dir", t.TempDir())
	cmd.Dir = t.TempDir()
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol %s", v)
	}
	if !strings.Contains(cs.InitializeResult().Instructions, `{"section": "planning"}`) {
		t.Errorf("instructions: %s", cs.InitializeResult().Instructions)
	}
	names := func() []string {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(); slices.Contains(got, "planning_setup_plan") || !slices.Contains(got, "open_section") {
		t.Errorf("tools/list of a fresh session: %v", got)
	}
	c := sdkClient{cs}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); !r.IsError || r.text() != closedPlanning {
		t.Errorf("a closed tool: %+v", r)
	}
	opened(t, c.call(t, "open_section", map[string]any{"section": "planning"}))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Error("no tools/list_changed")
	}
	if got := names(); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list once open: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); r.IsError {
		t.Errorf("planning_setup_plan once open: %+v", r)
	}
}

// TestDisclosureGoSDKOverHTTP: the official Go SDK's client in its default
// mode over HTTP, which has no connection, opens the section in the session
// open_section starts, lists its tools by naming the session in the _meta
// of tools/list, and calls them with the session's handle.
func TestDisclosureGoSDKOverHTTP(t *testing.T) {
	s := serveHTTP(t, "--config", closedConfig(t))
	c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "")
	names := func(meta mcp.Meta) []string {
		res, err := c.cs.ListTools(t.Context(), &mcp.ListToolsParams{Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(nil); slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list without a session: %v", got)
	}
	r := c.call(t, "open_section", map[string]any{"section": "planning"})
	opened(t, r)
	h := r.session(t)
	if got := names(mcp.Meta{"io.github.wink-mcp/session": h}); !slices.Contains(got, "planning_setup_plan") {
		t.Errorf("tools/list naming the session: %v", got)
	}
	if r := c.call(t, "planning_setup_plan", with(h, map[string]any{"objective": "Ship it"})); r.IsError {
		t.Errorf("planning_setup_plan in the session: %+v", r)
	}
	if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it"}); !r.IsError || r.text() != closedPlanning {
		t.Errorf("planning_setup_plan in a new session: %+v", r)
	}
}
