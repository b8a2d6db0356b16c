package transport

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	winkserver "github.com/wink-mcp/wink-mcp/server"
)

// startWinkStdio serves the wink test server (planning and the HTTP tests'
// tools, through the real pipeline) over stdio.
func startWinkStdio(t *testing.T) *testClient {
	t.Helper()
	f := &httpFixture{started: make(chan string, 100), release: make(chan struct{}), deaf: make(chan struct{})}
	tree, err := sections.NewTree(planning.New(planning.React), f.testSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := winkserver.New(winkserver.Options{Name: "t", Version: "1", Tree: tree, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := startClient(t, srv.MCP(), StdioOptions{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { close(f.deaf) }) // first: deaf calls keep the server
	c.initialize("client")
	return c
}

// TestStdioClientRequestsThroughPipeline has pipeline tools ask the client
// for a sampled message and for user input over stdio.
func TestStdioClientRequestsThroughPipeline(t *testing.T) {
	c := startWinkStdio(t)
	c.sendLine(callLine("1", "sample", map[string]any{"token": "hi"}))
	req := c.next()
	if req.Method != "sampling/createMessage" {
		t.Fatalf("got %s, want a sampling request", req.raw)
	}
	c.sendLine(`{"jsonrpc":"2.0","id":` + req.id() + `,"result":{"role":"assistant","content":{"type":"text","text":"model says hi"},"model":"m"}}`)
	if text, isErr := c.expectResult(`"1"`).toolText(t); isErr || text != "sampled model says hi" {
		t.Fatalf("sample: %q (isError %v)", text, isErr)
	}
	c.sendLine(callLine("2", "elicit", map[string]any{"token": "name?"}))
	req = c.next()
	if req.Method != "elicitation/create" {
		t.Fatalf("got %s, want an elicitation request", req.raw)
	}
	c.sendLine(`{"jsonrpc":"2.0","id":` + req.id() + `,"result":{"action":"decline"}}`)
	if text, _ := c.expectResult(`"2"`).toolText(t); !strings.HasPrefix(text, "elicited decline") {
		t.Fatalf("elicit: %q", text)
	}
}

// TestStdioNotificationsPrecedeResponseRepeated calls a pipeline tool that
// sends progress and log notifications many times; each time they all come
// before its response.
func TestStdioNotificationsPrecedeResponseRepeated(t *testing.T) {
	c := startWinkStdio(t)
	c.sendLine(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"info"}}`)
	c.expectResult(`"lvl"`)
	for i := range 200 {
		id := fmt.Sprintf(`"n%d"`, i)
		c.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"notify","arguments":{"n":2,"token":"t%d"},"_meta":{"progressToken":"p%d"}}}`, id, i, i))
		for k := range 4 {
			m := c.next()
			if m.Method == "" {
				t.Fatalf("call %d: message %d is %s, want a notification", i, k, m.raw)
			}
		}
		if text, _ := c.expectResult(id).toolText(t); text != fmt.Sprintf("done t%d", i) {
			t.Fatalf("call %d: %q", i, text)
		}
	}
}

// TestResourceUpdatedAfterStateChange subscribes to the plan and checks
// that a call that changes it is preceded by notifications/resources/updated
// on stdio.
func TestResourceUpdatedAfterStateChange(t *testing.T) {
	c := startWinkStdio(t)
	c.sendLine(`{"jsonrpc":"2.0","id":"s","method":"resources/subscribe","params":{"uri":"wink://planning/plan"}}`)
	c.expectResult(`"s"`)
	c.sendLine(callLine("p", "planning_setup_plan", map[string]any{"objective": "x"}))
	m := c.next()
	if m.Method != "notifications/resources/updated" || !strings.Contains(string(m.Params), "wink://planning/plan") {
		t.Fatalf("got %s, want resources/updated for the plan", m.raw)
	}
	c.expectResult(`"p"`)
}
