package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/transport"
)

// newServer returns a server with the planning section.
func newServer() *server.Server {
	tree, err := sections.NewTree(planning.New(planning.React))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "planner", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

func ExampleServeStdio() {
	srv := newServer()

	// A program passes os.Stdin and os.Stdout. ServeStdio returns once the
	// input has ended and the calls in flight are done, or when ctx ends.
	// The context function names the process's session (as --session
	// does); without it the session gets a fresh handle.
	stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1.0.0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"Ship it","initial_steps":["draft","review"]}}}
`)
	stdout := new(bytes.Buffer)
	err := transport.ServeStdio(context.Background(), srv.MCP(), stdin, stdout, transport.StdioOptions{
		ContextFunc: func(ctx context.Context) context.Context { return server.WithSessionName(ctx, "example") },
	})
	if err != nil {
		log.Fatal(err)
	}

	frames := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	fmt.Println(frames[len(frames)-1])
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Plan initialised with 2 steps.\n\nObjective: Ship it\nStatus: active\n\n1 [pending] draft\n2 [pending] review\n\nSession: example"}],"structuredContent":{"session":"example","objective":"Ship it","status":"active","steps":[{"step_id":1,"title":"draft","status":"pending"},{"step_id":2,"title":"review","status":"pending"}]}}}
}

func ExampleNewHTTP() {
	srv := newServer()
	ht, err := transport.NewHTTP(srv.MCP(), transport.HTTPOptions{
		Security: transport.Security{BearerTokens: []string{"s3cret"}},
		Handlers: srv.Handlers(), // extra handlers on the same listener, such as /metrics
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ht.Serve(ctx, ln) }() // returns after a graceful drain once ctx ends

	base := "http://" + ln.Addr().String()
	c, err := client.NewStreamableHttpClient(base+"/mcp",
		mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer s3cret"}))
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	var call mcp.CallToolRequest
	call.Params.Name = "planning_setup_plan"
	call.Params.Arguments = map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}
	res, err := c.CallTool(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	// The last line names the session, by a handle the server minted:
	// "Session: s_" and 26 random characters.
	text, handle, _ := strings.Cut(res.Content[0].(mcp.TextContent).Text, "\n\nSession: ")
	fmt.Println(text)
	fmt.Println(len(handle))

	fmt.Println(get(base + "/mcp"))
	fmt.Println(get(base + "/healthz"))

	c.Close()
	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output:
	// Plan initialised with 1 step.
	//
	// Objective: Ship it
	// Status: active
	//
	// 1 [pending] draft
	// 28
	// 401 Unauthorized {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized: a bearer token is required"}}
	// 200 OK {"sessions":1,"status":"ok"}
}

// get returns the status and body of a GET of url, without a token.
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + strings.TrimSpace(string(body))
}
