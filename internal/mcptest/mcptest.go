// Package mcptest drives an mcp-go server in-process, as an MCP client
// would, for tests: each message goes through the server's HandleMessage
// with the client's session and a Reply (package server) in its context,
// and each reply is decoded as the client would read it off the wire.
//
// Only test files import it.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	winkserver "github.com/wink-mcp/wink-mcp/server"
)

// Client is one client session of an MCP server. It implements mcp-go's
// session interfaces, so the server can set its log level and send it
// notifications.
//
// Like a transport's session, a client starts uninitialised: the server
// sends it notifications once it has sent "initialize". It is not
// registered with the server (a test of the session's lifetime registers
// it with RegisterSession); two clients with one id are one session to the
// server.
//
// A client may be used from several goroutines at once. Its methods fail
// the test with t.Fatal when the exchange itself goes wrong; what the
// server answers, a tool's error included, is for the test to check.
type Client struct {
	t      testing.TB
	srv    *mcpserver.MCPServer
	id     string
	lastID atomic.Int64
	notes  chan mcp.JSONRPCNotification
	ready  atomic.Bool
	level  atomic.Value // mcp.LoggingLevel
}

var _ mcpserver.SessionWithLogging = (*Client)(nil)

// NewClient returns a client of srv with the session id id.
func NewClient(t testing.TB, srv *mcpserver.MCPServer, id string) *Client {
	return &Client{t: t, srv: srv, id: id, notes: make(chan mcp.JSONRPCNotification, 256)}
}

// Send sends a request and returns its result, or the JSON-RPC error the
// server answered with. A client numbers its requests 1, 2, 3, … in the
// order it sends them.
func (c *Client) Send(ctx context.Context, method string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	c.t.Helper()
	var reply struct {
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	c.roundTrip(ctx, map[string]any{"jsonrpc": "2.0", "id": c.lastID.Add(1), "method": method, "params": params}, &reply)
	if reply.Result == nil && reply.Error == nil {
		c.t.Fatalf("%s: no reply", method)
	}
	return reply.Result, reply.Error
}

// Notify sends a notification, which has no reply.
func (c *Client) Notify(ctx context.Context, method string, params any) {
	c.t.Helper()
	var reply json.RawMessage
	c.roundTrip(ctx, map[string]any{"jsonrpc": "2.0", "method": method, "params": params}, &reply)
	if string(reply) != "null" {
		c.t.Fatalf("%s: a notification got the reply %s", method, reply)
	}
}

// roundTrip hands msg to the server as JSON and decodes its reply into v.
func (c *Client) roundTrip(ctx context.Context, msg map[string]any, v any) {
	c.t.Helper()
	raw, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	var id json.RawMessage
	if n, ok := msg["id"]; ok {
		id = json.RawMessage(fmt.Sprint(n))
	}
	// As a transport does: the response is the first given to the
	// request's Reply, by its handler or by the server when the call
	// overruns its deadline (winkserver.Reply).
	answers := make(chan mcp.JSONRPCMessage, 1)
	r := winkserver.NewReply(id, func(m mcp.JSONRPCMessage, _ bool) { answers <- m })
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		r.Send(c.srv.HandleMessage(r.Context(c.srv.WithContext(ctx, c)), raw))
	}()
	var resp mcp.JSONRPCMessage
	select {
	case resp = <-answers:
	case <-returned:
		select {
		case resp = <-answers:
		default: // a notification's
		}
	}
	reply, err := json.Marshal(resp)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(reply, v); err != nil {
		c.t.Fatalf("%s: %v", msg["method"], err)
	}
}

// Call calls a tool with args (marshalled as JSON; a json.RawMessage is
// sent as it is) and meta (the request's _meta, none when nil). A JSON-RPC
// error fails the test: a test expecting one calls Send.
func (c *Client) Call(ctx context.Context, tool string, args any, meta map[string]any) Result {
	c.t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	raw, rpcErr := c.Send(ctx, "tools/call", params)
	if rpcErr != nil {
		c.t.Fatalf("tools/call %s: JSON-RPC error %d %s", tool, rpcErr.Code, rpcErr.Message)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatalf("tools/call %s: %v", tool, err)
	}
	return r
}

// ToolNames returns the names tools/list gives, in its order.
func (c *Client) ToolNames(ctx context.Context) []string {
	c.t.Helper()
	raw, rpcErr := c.Send(ctx, "tools/list", map[string]any{})
	if rpcErr != nil {
		c.t.Fatalf("tools/list: JSON-RPC error %d %s", rpcErr.Code, rpcErr.Message)
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(raw, &list); err != nil {
		c.t.Fatalf("tools/list: %v", err)
	}
	names := make([]string, len(list.Tools))
	for i, tl := range list.Tools {
		names[i] = tl.Name
	}
	return names
}

// Notifications returns the notifications the server has sent the client
// since the last call, oldest first. The client holds up to 256; the
// server drops further ones until they are taken.
func (c *Client) Notifications() []mcp.JSONRPCNotification {
	var out []mcp.JSONRPCNotification
	for {
		select {
		case n := <-c.notes:
			out = append(out, n)
		default:
			return out
		}
	}
}

// Initialize marks the session initialised; the server calls it on
// "initialize".
func (c *Client) Initialize() { c.ready.Store(true) }

// Initialized reports whether the session has been initialised.
func (c *Client) Initialized() bool { return c.ready.Load() }

// NotificationChannel is where the server sends notifications.
func (c *Client) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }

// SessionID returns the client's session id.
func (c *Client) SessionID() string { return c.id }

// SetLogLevel sets the least level of the log messages the client gets.
func (c *Client) SetLogLevel(level mcp.LoggingLevel) { c.level.Store(level) }

// GetLogLevel returns the least level of the log messages the client gets:
// error until set.
func (c *Client) GetLogLevel() mcp.LoggingLevel {
	if level, ok := c.level.Load().(mcp.LoggingLevel); ok {
		return level
	}
	return mcp.LoggingLevelError
}

// Result is a tools/call result, decoded loosely.
type Result struct {
	Content           []Content      `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	Meta              map[string]any `json:"_meta"`
}

// Content is one block of a result's content: text, a link to a
// resource, an image (data, base64) or an embedded resource.
type Content struct {
	Type     string    `json:"type"`
	Text     string    `json:"text"`
	URI      string    `json:"uri"`
	Data     string    `json:"data"`
	MIMEType string    `json:"mimeType"`
	Resource *Resource `json:"resource"`
}

// Resource is the resource of an embedded resource block; Blob is base64.
type Resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// Text returns the text blocks of the content, joined: what the model
// reads.
func (r Result) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// Session returns the handle of the session the result names in its
// structured content, or "".
func (r Result) Session() string {
	h, _ := r.StructuredContent["session"].(string)
	return h
}

// Said returns Text without the line that names the result's session
// ("Session: HANDLE", which the server adds after a call that changed
// state), for tests of what a tool says. The line is removed only when it
// names the session of the structured content.
func (r Result) Said() string {
	text, h := r.Text(), r.Session()
	if h == "" {
		return text
	}
	if text == "Session: "+h {
		return ""
	}
	if s, ok := strings.CutSuffix(text, "\n\nSession: "+h); ok {
		return s
	}
	return text
}
