package server_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/tools"
)

// handleIn finds a handle in a text.
var handleIn = regexp.MustCompile(`s_[A-Z2-7]{26}`)

// needSection keeps a count: start succeeds, need_count fails for want of it (tools.Missing)
// while it is zero, refuse fails plainly, and gated is denied by a
// sequential dependency on add until add has succeeded.
func needSection() *sections.Section {
	ann := tools.Annotations{Title: "Need"}
	current := func(ctx *tools.Context) int {
		n, _ := session.Get(ctx.Session, count)
		return n
	}
	return &sections.Section{
		Key: "need", Title: "Need",
		Setup: func(r *session.Registry) {
			session.Persist(r, count, session.JSON[int]())
			session.On(r, count, func(old int, _ bool, ev added) (int, error) { return old + ev.n, nil })
		},
		Policies: []policy.Policy{policy.NewSequentialDependency(map[string][]string{"gated": {"add"}})},
		Tools: []*tools.Tool{
			tools.New("start", "Succeed, changing nothing.", ann, func(*tools.Context, noParams) (tools.Result[any], error) {
				return tools.OK[any]("Started.", nil), nil
			}),
			tools.New("add", "Add one to the count.", ann, func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
				return tools.OK[any]("Added.", nil), ctx.Dispatch(added{1})
			}),
			tools.New("need_count", "Need a count.", ann, func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
				if current(ctx) == 0 {
					return tools.Missing[any]("count", "No count yet."), nil
				}
				return tools.OK[any]("Counted.", nil), nil
			}),
			tools.New("refuse", "Refuse.", ann, func(*tools.Context, noParams) (tools.Result[any], error) {
				return tools.Fail[any]("Refused."), nil
			}),
			tools.New("gated", "Run after add.", ann, func(*tools.Context, noParams) (tools.Result[any], error) {
				return tools.OK[any]("Ran.", nil), nil
			}),
		},
	}
}

// TestNewSessionSaysSo: a call that fails for want of what its session
// lacks, in a session started for it (a 2026-07-28 request that names
// none), says that its session is new and how to name the one meant;
// the same failure in a session it named, or its connection's, does not,
// nor does a failure for another reason. Either way the session started
// for a failed call is not kept.
func TestNewSessionSaysSo(t *testing.T) {
	tree, err := sections.NewTree(needSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	modernClient := mcptest.NewClient(t, srv.MCP(), "") // no connection
	// A session of the modern client's, with nothing counted.
	handle := modernClient.Call(ctx, "start", map[string]any{}, modern(nil)).Session()
	if handle == "" {
		t.Fatal("start named no session")
	}
	legacy := mcptest.NewClient(t, srv.MCP(), "legacy")

	tests := []struct {
		name   string
		client *mcptest.Client
		tool   string
		args   map[string]any
		meta   map[string]any
		want   string
	}{
		{"tool failure, new session", modernClient, "need_count", nil, modern(nil),
			"No count yet. " + sessions.NewSessionMessage("count")},
		{"policy denial, new session", modernClient, "gated", nil, modern(nil),
			"Tool 'gated' requires: add. " + sessions.NewSessionMessage("record of a successful call of add")},
		{"other failure, new session", modernClient, "refuse", nil, modern(nil), "Refused."},
		{"tool failure, session named", modernClient, "need_count", map[string]any{"session": handle}, modern(nil), "No count yet."},
		{"tool failure, session named in _meta", modernClient, "need_count", nil, modern(map[string]any{server.MetaSession: handle}), "No count yet."},
		{"tool failure, connection's session", legacy, "need_count", nil, nil, "No count yet."},
		{"policy denial, connection's session", legacy, "gated", nil, nil, "Tool 'gated' requires: add"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == nil {
				args = map[string]any{}
			}
			r := tt.client.Call(ctx, tt.tool, args, tt.meta)
			if !r.IsError || r.Text() != tt.want {
				t.Errorf("got isError=%v %q\nwant %q", r.IsError, r.Text(), tt.want)
			}
			if handleIn.MatchString(r.Text()) || r.Session() != "" {
				t.Errorf("the result names a session: %+v", r)
			}
		})
	}
	if n := srv.Sessions().Len(); n != 2 { // start's, and the legacy client's
		t.Errorf("%d sessions, want 2: a session started for a failed call was kept", n)
	}
}
