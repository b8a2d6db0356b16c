package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// newClosedServer returns a server on st whose probe section starts
// closed and whose echo section is open, with the policies given.
func newClosedServer(t *testing.T, st store.Store, policies ...policy.Policy) *server.Server {
	t.Helper()
	probe := probeSection()
	probe.Closed = true
	tree, err := sections.NewTree(probe, echoSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, SessionTTL: time.Minute, Store: st, Policies: policies,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// closedProbe is what a call of probe_add answers while the probe section
// is closed.
const closedProbe = `Tool 'probe_add' is in section 'probe', which is closed: call open_section {"section": "probe"} first.`

// toolNames returns the names in the tools/list of c, with meta as the
// request's _meta when it is not nil.
func toolNames(t *testing.T, c *mcptest.Client, meta map[string]any) []string {
	t.Helper()
	params := map[string]any{}
	if meta != nil {
		params["_meta"] = meta
	}
	raw, rpcErr := c.Send(context.Background(), "tools/list", params)
	if rpcErr != nil {
		t.Fatalf("tools/list: %+v", rpcErr)
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// listChanged counts the notifications/tools/list_changed in ns.
func listChanged(ns []mcp.JSONRPCNotification) int {
	n := 0
	for _, note := range ns {
		if note.Method == string(mcp.MethodNotificationToolsListChanged) {
			n++
		}
	}
	return n
}

// TestOpenSectionOnAConnection: a connection's session lists open_section
// and the open sections' tools; a call of a closed tool says which section
// to open; open_section opens it for the session, tells the connection
// that the list changed, returns the section's guidance, and from then on
// its tools are listed and run. Listing the tools starts no session.
// Another connection's session still has the section closed.
func TestOpenSectionOnAConnection(t *testing.T) {
	srv := newClosedServer(t, nil)
	ctx := context.Background()
	c := mcptest.NewClient(t, srv.MCP(), "conn")
	if err := srv.MCP().RegisterSession(ctx, c); err != nil {
		t.Fatal(err)
	}
	raw, _ := c.Send(ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	var init struct {
		Instructions string
		Capabilities struct{ Tools struct{ ListChanged bool } }
	}
	if err := json.Unmarshal(raw, &init); err != nil {
		t.Fatal(err)
	}
	if !init.Capabilities.Tools.ListChanged || !strings.Contains(init.Instructions, "## 2. Probe\n\nTools that fail on purpose.\n\nThis section is closed") {
		t.Errorf("initialize: %s", raw)
	}
	if got, want := toolNames(t, c, nil), []string{"open_section", "echo_say"}; !slices.Equal(got, want) {
		t.Errorf("tools/list of a fresh session = %v, want %v", got, want)
	}
	if n := srv.Sessions().Len(); n != 0 {
		t.Errorf("tools/list started %d sessions, want none", n)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": "not even a number"}, nil); !r.IsError || r.Text() != closedProbe {
		t.Errorf("a closed tool: %+v", r)
	}
	c.Notifications()
	r := c.Call(ctx, "open_section", map[string]any{"section": "probe"}, nil)
	if r.IsError || !strings.Contains(r.Text(), "Opened section 'probe'; its tools are now listed: probe_get, probe_add") ||
		!strings.Contains(r.Text(), "# 1. Probe\n\nTools that fail on purpose.") || r.StructuredContent["section"] != "probe" {
		t.Fatalf("open_section: %+v", r)
	}
	if n := listChanged(c.Notifications()); n != 1 {
		t.Errorf("%d tools/list_changed notifications, want 1", n)
	}
	if got := toolNames(t, c, nil); len(got) != 2+len(probeSection().Tools) || !slices.Contains(got, "probe_add") {
		t.Errorf("tools/list after open_section = %v", got)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 2}, nil); r.IsError {
		t.Errorf("probe_add once open: %+v", r)
	}
	if r := c.Call(ctx, "open_section", map[string]any{"section": "probe"}, nil); r.IsError || !strings.HasPrefix(r.Text(), "Section 'probe' is already open") {
		t.Errorf("open_section again: %+v", r)
	}
	if r := c.Call(ctx, "open_section", map[string]any{"section": "echo"}, nil); !r.IsError || !strings.Contains(r.Text(), "/section") {
		t.Errorf("open_section of a section that is not closed: %+v", r)
	}

	other := mcptest.NewClient(t, srv.MCP(), "other")
	if err := srv.MCP().RegisterSession(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, other, nil); slices.Contains(got, "probe_add") {
		t.Errorf("another connection lists %v", got)
	}
	if r := other.Call(ctx, "probe_add", map[string]any{"by": 1}, nil); !r.IsError || r.Text() != closedProbe {
		t.Errorf("another connection's call: %+v", r)
	}
}

// TestOpenSectionByHandle: a 2026-07-28 client lists the tools of a fresh
// session until it names its session in the _meta of tools/list; a call
// that names the session runs the tools of the sections it opened, and a
// client listening with the session's handle hears that the list changed
// while it listens.
func TestOpenSectionByHandle(t *testing.T) {
	srv := newClosedServer(t, nil)
	ctx := context.Background()
	c := mcptest.NewClient(t, srv.MCP(), "")
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 1}, modern(nil)); !r.IsError || r.Text() != closedProbe {
		t.Errorf("a closed tool without a session: %+v", r)
	}
	if n := srv.Sessions().Len(); n != 0 {
		t.Errorf("%d sessions after a refused call, want 0", n)
	}
	r := c.Call(ctx, "open_section", map[string]any{"section": "probe"}, modern(nil))
	h := r.Session()
	if r.IsError || h == "" {
		t.Fatalf("open_section: %+v", r)
	}

	listener := mcptest.NewClient(t, srv.MCP(), "")
	listener.Initialize()
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		listener.Send(lctx, "subscriptions/listen", map[string]any{
			"notifications": map[string]any{"toolsListChanged": true},
			"_meta":         modern(map[string]any{server.MetaSession: h}),
		})
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ns := listener.Notifications(); len(ns) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("subscriptions/listen was not acknowledged")
		}
		time.Sleep(5 * time.Millisecond)
	}

	if got := toolNames(t, c, modern(nil)); slices.Contains(got, "probe_add") {
		t.Errorf("tools/list naming no session = %v", got)
	}
	if got := toolNames(t, c, modern(map[string]any{server.MetaSession: h})); !slices.Contains(got, "probe_add") {
		t.Errorf("tools/list naming the session = %v", got)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 2, "session": h}, modern(nil)); r.IsError {
		t.Errorf("probe_add in the session: %+v", r)
	}
	c.Call(ctx, "open_section", map[string]any{"section": "probe", "session": h}, modern(nil))
	stop()
	<-done
	// Once its stream has ended, the listener is told nothing more.
	c.Call(ctx, "open_section", map[string]any{"section": "probe", "session": h}, modern(nil))
	if n := listChanged(listener.Notifications()); n != 1 {
		t.Errorf("the listener heard %d tools/list_changed, want 1", n)
	}
}

// failOpen fails the commit of every open_section call.
type failOpen struct{}

func (failOpen) Name() string            { return "fail-open" }
func (failOpen) Check(*tools.Call) error { return nil }
func (failOpen) OnResult(c *tools.Call, _ *tools.Outcome) error {
	if c.Tool.Name() == sections.OpenSection {
		return errors.New("not today")
	}
	return nil
}

// TestOpenSectionRollsBack: an open_section call that fails leaves the
// section closed.
func TestOpenSectionRollsBack(t *testing.T) {
	srv := newClosedServer(t, nil, failOpen{})
	ctx := context.Background()
	c := mcptest.NewClient(t, srv.MCP(), "conn")
	if r := c.Call(ctx, "open_section", map[string]any{"section": "probe"}, nil); !r.IsError {
		t.Fatalf("open_section: %+v", r)
	}
	if got := toolNames(t, c, nil); slices.Contains(got, "probe_add") {
		t.Errorf("tools/list after a failed open_section = %v", got)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 1}, nil); !r.IsError || r.Text() != closedProbe {
		t.Errorf("probe_add after a failed open_section: %+v", r)
	}
}

// TestOpenSectionsAreStored: the sections a session opened are stored with
// it: another server on the same store (a restart, a replica) lists and
// runs their tools for the session.
func TestOpenSectionsAreStored(t *testing.T) {
	st := store.NewMemory(store.Options{})
	ctx := context.Background()
	h := mcptest.NewClient(t, newClosedServer(t, st).MCP(), "").
		Call(ctx, "open_section", map[string]any{"section": "probe"}, modern(nil)).Session()
	c := mcptest.NewClient(t, newClosedServer(t, st).MCP(), "")
	if got := toolNames(t, c, modern(map[string]any{server.MetaSession: h})); !slices.Contains(got, "probe_add") {
		t.Errorf("tools/list after the restart = %v", got)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 1, "session": h}, modern(nil)); r.IsError {
		t.Errorf("probe_add after the restart: %+v", r)
	}
}

// TestClosedToolsListIsSmall: the tools/list of a fresh session when every
// section is closed holds open_section alone, in less than 2 KB.
func TestClosedToolsListIsSmall(t *testing.T) {
	probe, echo := probeSection(), echoSection()
	probe.Closed, echo.Closed = true, true
	tree, err := sections.NewTree(probe, echo)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	raw, rpcErr := mcptest.NewClient(t, srv.MCP(), "conn").Send(context.Background(), "tools/list", map[string]any{})
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	if len(raw) >= 2048 || strings.Count(string(raw), `"name"`) != 1 {
		t.Errorf("tools/list is %d bytes: %s", len(raw), raw)
	}
	t.Logf("tools/list of a fresh session, every section closed: %d bytes", len(raw))
}
