package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/tools"
)

// handleShape is the shape of a minted handle.
var handleShape = regexp.MustCompile(`^s_[A-Z2-7]{26}$`)

// modern is the _meta of a request of the 2026-07-28 era, plus extra.
func modern(extra map[string]any) map[string]any {
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	maps.Copy(m, extra)
	return m
}

// echoSection is a section that keeps no state.
func echoSection() *sections.Section {
	return &sections.Section{
		Key: "echo", Title: "Echo", Stateless: true,
		Tools: []*tools.Tool{tools.New("echo_say", "Say a word.", tools.Annotations{Title: "Say"},
			func(_ *tools.Context, p struct {
				Word string `json:"word" jsonschema:"The word."`
			}) (tools.Result[any], error) {
				return tools.OK[any]("Said "+p.Word+".", nil), nil
			})},
	}
}

// clock is a settable clock, from now on.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newHandleServer returns a server with the probe section and the echo
// section, a session TTL of a minute, and its clock.
func newHandleServer(t *testing.T) (*server.Server, *clock) {
	t.Helper()
	tree, err := sections.NewTree(probeSection(), echoSection())
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, SessionTTL: time.Minute, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, clk
}

// TestModernRequestsCarryTheHandle: a client of the 2026-07-28 era without
// a connection starts a session with a call that changes state, reads the
// handle from its result, and continues the session by the argument or
// _meta; without a handle a read is refused and another call starts
// another session.
func TestModernRequestsCarryTheHandle(t *testing.T) {
	srv, _ := newHandleServer(t)
	ctx := context.Background()
	c := mcptest.NewClient(t, srv.MCP(), "") // never registered: no connection

	r := c.Call(ctx, "probe_add", map[string]any{"by": 2}, modern(nil))
	h := r.Session()
	if r.IsError || !handleShape.MatchString(h) || r.Text() != "Added 2.\n\n{\"count\":2}\n\nSession: "+h || r.StructuredContent["count"] != float64(2) {
		t.Fatalf("first call: %+v", r)
	}
	if r := c.Call(ctx, "probe_get", map[string]any{}, modern(nil)); !r.IsError || r.Text() != sessions.NoSessionMessage {
		t.Errorf("a read without a handle: %+v", r)
	}
	r = c.Call(ctx, "probe_add", map[string]any{"by": 3, "session": h}, modern(nil))
	if r.IsError || r.Session() != h || r.StructuredContent["count"] != float64(5) {
		t.Errorf("by the argument: %+v", r)
	}
	r = c.Call(ctx, "probe_get", map[string]any{}, modern(map[string]any{server.MetaSession: h}))
	if r.IsError || r.StructuredContent["count"] != float64(5) || r.Session() != "" || strings.Contains(r.Text(), "Session:") {
		t.Errorf("a read by _meta (which does not name the session): %+v", r)
	}
	r = c.Call(ctx, "probe_get", map[string]any{"session": h}, modern(map[string]any{server.MetaSession: "s_NOTAHANDLENOTAHANDLENOTAHA"}))
	if r.IsError || r.StructuredContent["count"] != float64(5) {
		t.Errorf("the argument does not win over _meta: %+v", r)
	}
	r = c.Call(ctx, "probe_get", map[string]any{"session": "s_NOTAHANDLENOTAHANDLENOTAHA"}, modern(map[string]any{server.MetaSession: h}))
	if !r.IsError || r.Text() != sessions.UnknownSessionMessage {
		t.Errorf("the argument does not win over _meta: %+v", r)
	}
	r = c.Call(ctx, "probe_add", map[string]any{"by": 1}, modern(nil))
	if r.IsError || r.Session() == h || r.StructuredContent["count"] != float64(1) {
		t.Errorf("a call without a handle: %+v", r)
	}
	if n := srv.Sessions().Len(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	// The handle is not an argument of the tool: the session's log records
	// the call without it.
	var log []session.CallSummary
	text := readText(t, c, server.LogURI, modern(map[string]any{server.MetaSession: h}))
	if err := json.Unmarshal([]byte(text), &log); err != nil || len(log) != 4 || log[1].Args != `{"by":3}` {
		t.Errorf("log of the session: %s", text)
	}
}

// TestUnknownHandles: a handle of the wrong shape, one never minted, one
// of another principal and an expired one get the same answer, which
// creates nothing; the server serves on.
func TestUnknownHandles(t *testing.T) {
	srv, clk := newHandleServer(t)
	alice := identity.With(context.Background(), identity.Identity{Subject: "alice"})
	bob := identity.With(context.Background(), identity.Identity{Subject: "bob"})
	token := identity.With(context.Background(), identity.Identity{Credential: "0123"})
	c := mcptest.NewClient(t, srv.MCP(), "")
	mine := c.Call(alice, "probe_add", map[string]any{"by": 1}, modern(nil)).Session()
	theirs := c.Call(token, "probe_add", map[string]any{"by": 1}, modern(nil)).Session()
	old := c.Call(alice, "probe_add", map[string]any{"by": 1}, modern(nil)).Session()
	clk.advance(30 * time.Second)
	if r := c.Call(alice, "probe_get", map[string]any{"session": mine}, modern(nil)); r.IsError {
		t.Fatalf("own handle: %+v", r)
	}
	clk.advance(45 * time.Second) // old idle for 75s, mine for 45s
	for name, tc := range map[string]struct {
		ctx    context.Context
		handle string
	}{
		"wrong shape":      {alice, "s_ not a handle"},
		"too long":         {alice, "s_" + strings.Repeat("A", 200)},
		"never minted":     {alice, "s_AAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"another subject":  {bob, mine},
		"no credential":    {context.Background(), mine},
		"another token":    {alice, theirs},
		"expired":          {alice, old},
		"expired, by meta": {alice, old},
	} {
		for _, tool := range []string{"probe_add", "probe_get"} {
			args, meta := map[string]any{"by": 1, "session": tc.handle}, modern(nil)
			if strings.HasSuffix(name, "by meta") {
				args, meta = map[string]any{"by": 1}, modern(map[string]any{server.MetaSession: tc.handle})
			}
			if tool == "probe_get" {
				delete(args, "by")
			}
			if r := c.Call(tc.ctx, tool, args, meta); !r.IsError || r.Text() != sessions.UnknownSessionMessage || len(r.StructuredContent) != 0 {
				t.Errorf("%s, %s: %+v", name, tool, r)
			}
		}
	}
	_, rpcErr := c.Send(alice, "resources/read", map[string]any{"uri": server.LogURI, "_meta": modern(map[string]any{server.MetaSession: old})})
	if rpcErr == nil || !strings.Contains(rpcErr.Message, sessions.UnknownSessionMessage) {
		t.Errorf("a resource read by an expired handle: %+v", rpcErr)
	}
	if n := srv.Sessions().Len(); n != 2 {
		t.Errorf("%d sessions, want 2 (nothing created, the expired one gone)", n)
	}
	if r := c.Call(alice, "probe_add", map[string]any{"by": 1, "session": mine}, modern(nil)); r.IsError || r.StructuredContent["count"] != float64(2) {
		t.Errorf("own handle after the refusals: %+v", r)
	}
}

// TestConnectionSessions: a client with a connection uses its implicit
// session without naming it, whatever its protocol era when the connection
// is registered (stdio); the results name that session, and so does
// wink://session.
func TestConnectionSessions(t *testing.T) {
	srv, _ := newHandleServer(t)
	ctx := context.Background()
	legacy := mcptest.NewClient(t, srv.MCP(), "legacy") // a legacy client, registered or not
	h := legacy.Call(ctx, "probe_add", map[string]any{"by": 1}, nil).Session()
	if r := legacy.Call(ctx, "probe_add", map[string]any{"by": 1}, nil); r.Session() != h || r.StructuredContent["count"] != float64(2) {
		t.Errorf("legacy: %+v", r)
	}
	if got := readText(t, legacy, server.SessionURI, nil); got != h {
		t.Errorf("wink://session = %q, want %q", got, h)
	}

	stdio := mcptest.NewClient(t, srv.MCP(), "stdio")
	if err := srv.MCP().RegisterSession(ctx, stdio); err != nil {
		t.Fatal(err)
	}
	named := server.WithSessionName(ctx, "desk")
	for i := 1; i <= 2; i++ {
		if r := stdio.Call(named, "probe_add", map[string]any{"by": 1}, modern(nil)); r.Session() != "desk" || r.StructuredContent["count"] != float64(i) {
			t.Errorf("modern over a registered connection, call %d: %+v", i, r)
		}
	}
	if got := readText(t, stdio, server.SessionURI, modern(nil)); got != "desk" {
		t.Errorf("wink://session = %q", got)
	}
	// Its handle works from elsewhere, for the same principal.
	other := mcptest.NewClient(t, srv.MCP(), "")
	if r := other.Call(ctx, "probe_get", map[string]any{"session": "desk"}, modern(nil)); r.StructuredContent["count"] != float64(2) {
		t.Errorf("by the connection's handle: %+v", r)
	}
	if _, rpcErr := other.Send(ctx, "resources/read", map[string]any{"uri": server.SessionURI, "_meta": modern(nil)}); rpcErr == nil {
		t.Error("wink://session read without a session")
	}
	// The connection's end leaves a session the process named in the
	// store, for the next process to resume.
	srv.MCP().UnregisterSession(ctx, "stdio")
	if r := other.Call(ctx, "probe_get", map[string]any{"session": "desk"}, modern(nil)); r.StructuredContent["count"] != float64(2) {
		t.Errorf("after the connection ended: %+v", r)
	}
}

// readText reads a resource and returns its text.
func readText(t testing.TB, c *mcptest.Client, uri string, meta map[string]any) string {
	t.Helper()
	params := map[string]any{"uri": uri}
	if meta != nil {
		params["_meta"] = meta
	}
	raw, rpcErr := c.Send(context.Background(), "resources/read", params)
	if rpcErr != nil {
		t.Fatalf("%s: %+v", uri, rpcErr)
	}
	var res struct{ Contents []struct{ Text string } }
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) != 1 {
		t.Fatalf("%s: %s", uri, raw)
	}
	return res.Contents[0].Text
}

// TestMintedSessionOfAFailedCall: a call that would start a session and
// fails leaves none behind, and names none.
func TestMintedSessionOfAFailedCall(t *testing.T) {
	srv, _ := newHandleServer(t)
	c := mcptest.NewClient(t, srv.MCP(), "")
	for _, tool := range []string{"probe_fail", "probe_error", "probe_panic"} {
		if r := c.Call(context.Background(), tool, map[string]any{"by": 1}, modern(nil)); !r.IsError || strings.Contains(r.Text(), "Session:") {
			t.Errorf("%s: %+v", tool, r)
		}
	}
	if n := srv.Sessions().Len(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

// TestStatelessTools: a tool of a Stateless section takes no session
// argument, names no session, and runs without one.
func TestStatelessTools(t *testing.T) {
	srv, _ := newHandleServer(t)
	c := mcptest.NewClient(t, srv.MCP(), "")
	if r := c.Call(context.Background(), "echo_say", map[string]any{"word": "hi"}, modern(nil)); r.IsError || r.Text() != "Said hi." || r.StructuredContent != nil {
		t.Errorf("echo: %+v", r)
	}
	if r := c.Call(context.Background(), "echo_say", map[string]any{"word": "hi", "session": "x"}, modern(nil)); !r.IsError || r.Text() != "Unknown argument 'session'. echo_say takes: word." {
		t.Errorf("echo with a session argument: %+v", r)
	}
	if n := srv.Sessions().Len(); n != 0 {
		t.Errorf("%d sessions", n)
	}
}

// TestSessionArgument: the argument must be a string; empty means none.
func TestSessionArgument(t *testing.T) {
	srv, _ := newHandleServer(t)
	c := mcptest.NewClient(t, srv.MCP(), "")
	for arg, want := range map[any]string{
		3:    "Invalid arguments: /session: expected string, got number",
		true: "Invalid arguments: /session: expected string, got boolean",
		"":   "Added 1.",
	} {
		r := c.Call(context.Background(), "probe_add", map[string]any{"by": 1, "session": arg}, modern(nil))
		if got := r.Said(); got != want && !strings.HasPrefix(got, want+"\n\n") {
			t.Errorf("session %v: %q, want %q", arg, r.Text(), want)
		}
	}
	// An escaped key is the same key.
	r := c.Call(context.Background(), "probe_add", json.RawMessage(`{"by":1,"sessio\u006e":"s_AAAAAAAAAAAAAAAAAAAAAAAAAA"}`), modern(nil))
	if r.Text() != sessions.UnknownSessionMessage {
		t.Errorf("escaped key: %+v", r)
	}
}

// TestAdvertisedSchemas: the tools of a section that keeps state take an
// optional "session" string, and those that change state say "session" in
// their output schemas; stateless tools are as they were; a tool that has
// a "session" property of its own in such a section is refused.
func TestAdvertisedSchemas(t *testing.T) {
	srv, _ := newHandleServer(t)
	raw, rpcErr := mcptest.NewClient(t, srv.MCP(), "").Send(context.Background(), "tools/list", map[string]any{})
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	var list struct {
		Tools []struct {
			Name                      string
			InputSchema, OutputSchema struct {
				Properties map[string]struct{ Type string }
				Required   []string
			}
		}
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		in, out := tl.InputSchema.Properties["session"], tl.OutputSchema.Properties["session"]
		switch tl.Name {
		case "echo_say":
			if in.Type != "" || out.Type != "" {
				t.Errorf("%s: session in a stateless tool's schemas", tl.Name)
			}
		case "probe_get", "probe_secret", "probe_aside":
			if in.Type != "string" || out.Type != "" {
				t.Errorf("%s (read-only): input %v, output %v", tl.Name, in, out)
			}
		default:
			if in.Type != "string" || out.Type != "string" {
				t.Errorf("%s: input %v, output %v", tl.Name, in, out)
			}
		}
		for _, r := range append(tl.InputSchema.Required, tl.OutputSchema.Required...) {
			if r == "session" {
				t.Errorf("%s: session is required", tl.Name)
			}
		}
	}

	clash := tools.New("clash", "Take a session of its own.", tools.Annotations{Title: "Clash"},
		func(_ *tools.Context, _ struct {
			Session string `json:"session" jsonschema:"Mine."`
		}) (tools.Result[any], error) {
			return tools.OK[any]("", nil), nil
		})
	tree, err := sections.NewTree(&sections.Section{Key: "c", Title: "C", Tools: []*tools.Tool{clash}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.New(server.Options{Tree: tree}); err == nil || !strings.Contains(err.Error(), `section "c": tool "clash": input schema: the property "session"`) {
		t.Errorf("a tool with a session property: %v", err)
	}
}

func TestCheckSessionName(t *testing.T) {
	for name, ok := range map[string]bool{
		"desk": true, "s_ABCDEFGHIJKLMNOPQRSTUVWXYZ": true, "A-1_b": true, strings.Repeat("x", 128): true,
		"": false, "-x": false, "_x": false, "a b": false, "a/b": false, "é": false, strings.Repeat("x", 129): false,
	} {
		if err := server.CheckSessionName(name); (err == nil) != ok {
			t.Errorf("CheckSessionName(%q) = %v", name, err)
		}
	}
}
