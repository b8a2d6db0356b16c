package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	winkserver "github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
)

// httpFixture is a wink server with the planning section and test tools,
// served by the HTTP transport on a loopback httptest server.
type httpFixture struct {
	srv     *winkserver.Server
	ht      *HTTP
	ts      *httptest.Server
	url     string
	started chan string   // the token of every block or closer call that started
	release chan struct{} // closing it lets block and closer calls return
	deaf    chan struct{} // closing it lets deaf calls return
}

type tokenParams struct {
	Token string `json:"token" jsonschema:"A tag the call echoes."`
}

type notifyParams struct {
	N     int    `json:"n" jsonschema:"How many progress and log notifications to send."`
	Token string `json:"token" jsonschema:"A tag put in every notification."`
}

// testSection holds tools that exercise the transport through the real
// pipeline. It is Stateless, so that their results are exactly what they
// say: the handles of sessions are tested in package server.
func (f *httpFixture) testSection() *sections.Section {
	ann := tools.Annotations{Title: "Test"}
	return &sections.Section{
		Key:       "test",
		Title:     "Test",
		Stateless: true,
		Tools: []*tools.Tool{
			tools.New("notify", "Send n progress and log notifications, then return.", ann,
				func(ctx *tools.Context, p notifyParams) (tools.Result[any], error) {
					for i := range p.N {
						if err := ctx.Progress(float64(i+1), float64(p.N), p.Token); err != nil {
							return tools.Result[any]{}, err
						}
						if err := ctx.Log("info", fmt.Sprintf("%s-%d", p.Token, i)); err != nil {
							return tools.Result[any]{}, err
						}
					}
					return tools.OK[any]("done "+p.Token, nil), nil
				}),
			tools.New("block", "Set up a plan, then wait for release or the deadline.", ann,
				func(ctx *tools.Context, p tokenParams) (tools.Result[any], error) {
					if err := ctx.Dispatch(planning.PlanSetup{Objective: "block " + p.Token}); err != nil {
						return tools.Result[any]{}, err
					}
					f.started <- p.Token
					select {
					case <-f.release:
						return tools.OK[any]("released "+p.Token, nil), nil
					case <-ctx.Done():
						return tools.Result[any]{}, ctx.Err()
					}
				}),
			tools.New("closer", "Close the response stream, then wait for release.", ann,
				func(ctx *tools.Context, p tokenParams) (tools.Result[any], error) {
					if err := ctx.Progress(1, 2, "before close"); err != nil {
						return tools.Result[any]{}, err
					}
					ctx.CloseStream()
					f.started <- p.Token
					select {
					case <-f.release:
					case <-ctx.Done():
						return tools.Result[any]{}, ctx.Err()
					}
					if err := ctx.Progress(2, 2, "after close"); err != nil {
						return tools.Result[any]{}, err
					}
					return tools.OK[any]("resumed "+p.Token, nil), nil
				}),
			tools.New("deaf", "Send n progress notifications, then wait, deaf to the call's deadline, for deaf to close.", ann,
				func(ctx *tools.Context, p notifyParams) (tools.Result[any], error) {
					for i := range p.N {
						if err := ctx.Progress(float64(i+1), float64(p.N), p.Token); err != nil {
							return tools.Result[any]{}, err
						}
					}
					<-f.deaf
					return tools.OK[any]("too late "+p.Token, nil), nil
				}),
			tools.New("sample", "Ask the client's model for a message.", ann,
				func(ctx *tools.Context, p tokenParams) (tools.Result[any], error) {
					res, err := ctx.CreateMessage(mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
						Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(p.Token)}},
						MaxTokens: 10,
					}})
					if err != nil {
						return tools.Failf[any]("sampling failed: %v", err), nil
					}
					return tools.OK[any]("sampled "+res.Content.(mcp.TextContent).Text, nil), nil
				}),
			tools.New("elicit", "Ask the user for input.", ann,
				func(ctx *tools.Context, p tokenParams) (tools.Result[any], error) {
					res, err := ctx.Elicit(mcp.ElicitationRequest{Params: mcp.ElicitationParams{
						Message:         p.Token,
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
					}})
					if err != nil {
						return tools.Failf[any]("elicitation failed: %v", err), nil
					}
					return tools.OK[any](fmt.Sprintf("elicited %s %v", res.Action, res.Content), nil), nil
				}),
		},
	}
}

// newHTTPFixture starts the transport with opts on a loopback test server.
func newHTTPFixture(t testing.TB, opts HTTPOptions) *httpFixture {
	t.Helper()
	f := &httpFixture{started: make(chan string, 10000), release: make(chan struct{}), deaf: make(chan struct{})}
	tree, err := sections.NewTree(planning.New(planning.React), f.testSection())
	if err != nil {
		t.Fatal(err)
	}
	f.srv, err = winkserver.New(winkserver.Options{Name: "wink-test", Version: "1", Tree: tree, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f.ht, err = NewHTTP(f.srv.MCP(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.ht.Handler())
	f.url = f.ts.URL
	t.Cleanup(func() {
		f.ts.CloseClientConnections()
		f.ht.Close()
		f.ts.Close()
	})
	t.Cleanup(func() { close(f.deaf) }) // first: deaf calls keep the server
	return f
}

// waitStarted returns the token of the next block or closer call that
// started.
func (f *httpFixture) waitStarted(t testing.TB) string {
	t.Helper()
	select {
	case tok := <-f.started:
		return tok
	case <-time.After(failsafe):
		t.Fatal("no call started")
		return ""
	}
}

// msg is one JSON-RPC message as a client sees it.
type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	EventID string `json:"-"`
}

func (m msg) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// text returns the first text block of a tools/call result.
func (m msg) text(t testing.TB) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s (error %+v)", m.Result, m.Error)
	}
	return r.Content[0].Text
}

// hclient is a Streamable HTTP client made of plain HTTP requests, so that
// tests see exactly what goes over the wire.
type hclient struct {
	t      testing.TB
	url    string
	hc     *http.Client
	header http.Header
	sid    string

	mu     sync.Mutex
	nextID int
	// answer, when set, answers server→client requests.
	answer func(m msg) any
}

func newClient(t testing.TB, url string) *hclient {
	return &hclient{t: t, url: url, hc: &http.Client{}, header: http.Header{}}
}

func (c *hclient) id() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}

// post sends body to /mcp with the client's headers and session.
func (c *hclient) post(body any) *http.Response {
	c.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.url+"/mcp", bytes.NewReader(data))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// initialize starts a session and sends notifications/initialized.
func (c *hclient) initialize() {
	c.t.Helper()
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if c.sid == "" {
		c.t.Fatalf("initialize: no session ID in %v", resp.Header)
	}
	c.notify("notifications/initialized", nil)
}

// notify sends a notification and expects 202.
func (c *hclient) notify(method string, params any) {
	c.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	resp := c.post(m)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("%s: status %d", method, resp.StatusCode)
	}
}

// request sends a request and returns every message that came back for
// it, the response last. Server→client requests on the stream are answered
// with c.answer.
func (c *hclient) request(method string, params any) []msg {
	c.t.Helper()
	id := c.id()
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, body)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var m msg
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			c.t.Fatal(err)
		}
		return []msg{m}
	}
	return c.readStream(resp.Body, fmt.Sprint(id))
}

// readStream reads SSE events until the response with id (or the end of
// the stream), answering server→client requests.
func (c *hclient) readStream(r io.Reader, id string) []msg {
	c.t.Helper()
	var out []msg
	for ev := range sseEvents(r) {
		if ev.data == "" {
			continue // priming event or keepalive
		}
		var m msg
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			c.t.Fatalf("bad event data %q: %v", ev.data, err)
		}
		m.EventID = ev.id
		out = append(out, m)
		if m.Method != "" && len(m.ID) > 0 {
			c.reply(m)
			continue
		}
		if m.isResponse() && string(m.ID) == id {
			return out
		}
	}
	return out
}

// reply answers a server→client request.
func (c *hclient) reply(m msg) {
	c.t.Helper()
	if c.answer == nil {
		c.t.Fatalf("unexpected server request %s", m.Method)
	}
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.ID), "result": c.answer(m)})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("reply to %s: status %d", m.Method, resp.StatusCode)
	}
}

// call calls a tool and returns the messages that came back, the response
// last.
func (c *hclient) call(tool string, args any) []msg {
	c.t.Helper()
	return c.request("tools/call", map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{"progressToken": tool}})
}

// callText calls a tool and returns its result's text.
func (c *hclient) callText(tool string, args any) string {
	c.t.Helper()
	msgs := c.call(tool, args)
	return msgs[len(msgs)-1].text(c.t)
}

// delete ends the session and returns the status.
func (c *hclient) delete() int {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, c.url+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
	retry           string
}

// sseEvents parses an SSE stream.
func sseEvents(r io.Reader) func(yield func(sseEvent) bool) {
	return func(yield func(sseEvent) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var ev sseEvent
		var data []string
		seen := false
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if seen {
					ev.data = strings.Join(data, "\n")
					if !yield(ev) {
						return
					}
				}
				ev, data, seen = sseEvent{}, nil, false
				continue
			}
			if strings.HasPrefix(line, ":") {
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			seen = true
			switch field {
			case "id":
				ev.id = value
			case "event":
				ev.event = value
			case "data":
				data = append(data, value)
			case "retry":
				ev.retry = value
			}
		}
	}
}

// waitFor polls cond until it holds; it only fails after failsafe.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
