package mcptest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
)

// newServer returns a bare mcp-go server with one tool, which logs its
// argument and returns it, failing when asked to.
func newServer() *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("test", "1", mcpserver.WithLogging())
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("say"), mcp.WithBoolean("fail")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			say := req.GetString("say", "")
			_ = mcpserver.ServerFromContext(ctx).SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "echo", say))
			if req.GetBool("fail", false) {
				return mcp.NewToolResultError("Failed: " + say), nil
			}
			return mcp.NewToolResultStructured(map[string]any{"said": say}, say), nil
		})
	return srv
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	c := mcptest.NewClient(t, newServer(), "s1")
	if got := fmt.Sprint(c.ToolNames(ctx)); got != "[echo]" {
		t.Errorf("tools %s, want [echo]", got)
	}
	if r := c.Call(ctx, "echo", map[string]any{"say": "hi"}, nil); r.IsError || r.Text() != "hi" || r.StructuredContent["said"] != "hi" {
		t.Errorf("got %+v", r)
	}
	if r := c.Call(ctx, "echo", map[string]any{"say": "no", "fail": true}, nil); !r.IsError || r.Text() != "Failed: no" {
		t.Errorf("got %+v", r)
	}
	if _, rpcErr := c.Send(ctx, "no/such/method", nil); rpcErr == nil || rpcErr.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("got %+v, want method not found", rpcErr)
	}
	// Notifications come only once the client is initialised.
	if n := c.Notifications(); len(n) != 0 {
		t.Errorf("notifications before initialize: %+v", n)
	}
	if _, rpcErr := c.Send(ctx, "initialize", map[string]any{"protocolVersion": mcp.LATEST_PROTOCOL_VERSION}); rpcErr != nil || !c.Initialized() {
		t.Fatalf("initialize: %+v", rpcErr)
	}
	c.Notify(ctx, "notifications/initialized", nil)
	if _, rpcErr := c.Send(ctx, "logging/setLevel", map[string]any{"level": "info"}); rpcErr != nil || c.GetLogLevel() != mcp.LoggingLevelInfo {
		t.Fatalf("logging/setLevel: %+v, level %s", rpcErr, c.GetLogLevel())
	}
	c.Call(ctx, "echo", map[string]any{"say": "a"}, nil)
	c.Call(ctx, "echo", map[string]any{"say": "b"}, nil)
	var got []any
	for _, n := range c.Notifications() {
		got = append(got, n.Params.AdditionalFields["data"])
	}
	if fmt.Sprint(got) != "[a b]" {
		t.Errorf("log messages %v, want [a b]", got)
	}
}

func TestSaid(t *testing.T) {
	text := func(s string) []mcptest.Content { return []mcptest.Content{{Type: "text", Text: s}} }
	named := map[string]any{"session": "s_A"}
	for _, tc := range []struct {
		r         mcptest.Result
		said, ses string
	}{
		{mcptest.Result{Content: text("Done.\n\nSession: s_A"), StructuredContent: named}, "Done.", "s_A"},
		{mcptest.Result{Content: text("Session: s_A"), StructuredContent: named}, "", "s_A"},
		{mcptest.Result{Content: text("Done.\n\nSession: s_B"), StructuredContent: named}, "Done.\n\nSession: s_B", "s_A"},
		{mcptest.Result{Content: text("Done.\n\nSession: s_A")}, "Done.\n\nSession: s_A", ""},
	} {
		if got := tc.r.Said(); got != tc.said || tc.r.Session() != tc.ses {
			t.Errorf("%q: Said() = %q, Session() = %q; want %q, %q", tc.r.Text(), got, tc.r.Session(), tc.said, tc.ses)
		}
	}
}
