package transport

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestShutdownAbandonsDeafCalls: a call that ignores its cancellation (a
// handler stuck in a system call) holds Serve no longer than the drain
// timeout and the grace after it.
func TestShutdownAbandonsDeafCalls(t *testing.T) {
	s := startServing(t, HTTPOptions{DrainTimeout: time.Millisecond})
	deaf := make(chan struct{})
	defer close(deaf)
	s.srv.MCP().AddTool(mcp.NewTool("deaf"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.started <- "deaf"
		<-deaf
		return mcp.NewToolResultText("too late"), nil
	})
	c := newClient(t, s.url)
	c.initialize()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deaf"}}`
	req, err := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	go func() {
		if resp, err := c.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	s.waitStarted(t)
	stopped := time.Now()
	s.cancel()
	if err := s.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if d := time.Since(stopped); d > cancelGrace+shutdownGrace+time.Second {
		t.Errorf("Serve returned %v after the cancellation, want at most %v", d, cancelGrace+shutdownGrace)
	}
}
