// Package mcpc is the client side of the benchmarks and of the release's
// checks: it starts a server process (Process) and speaks MCP to it over
// stdio or Streamable HTTP, with a session per connection (protocol
// 2025-11-25) or, over HTTP, with none (2026-07-28, whose sessions are
// handles the server mints).
package mcpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Protocol versions the clients speak.
const (
	// Legacy has a session per connection, opened by initialize.
	Legacy = "2025-11-25"
	// Modern has no session and no initialize: each request carries its
	// version, in its headers and _meta.
	Modern = "2026-07-28"
)

// A Client speaks JSON-RPC to one MCP server.
type Client interface {
	// Call sends a request and returns its result; an error response is
	// an error.
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Notify sends a notification without parameters.
	Notify(ctx context.Context, method string) error
	// Close ends the session.
	Close()
}

// Initialize opens the session of c: the initialize request, then the
// initialized notification.
func Initialize(ctx context.Context, c Client) error {
	params := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`, Legacy)
	if _, err := c.Call(ctx, "initialize", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return c.Notify(ctx, "notifications/initialized")
}

// Params returns the params of a tools/call of tool with args, a JSON
// object; modern adds the _meta of a request of the 2026-07-28 era.
func Params(tool string, args json.RawMessage, modern bool) json.RawMessage {
	p := struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"arguments"`
		Meta map[string]any  `json:"_meta,omitempty"`
	}{Name: tool, Args: args}
	if modern {
		p.Meta = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    Modern,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1"},
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // a name and raw JSON always marshal
	}
	return b
}

// Result is what the benchmarks read of a tools/call result.
type Result struct {
	IsError           bool `json:"isError"`
	StructuredContent struct {
		Session string `json:"session"`
	} `json:"structuredContent"`
}

// ToolCall makes one tools/call with params and returns its result, or an
// error unless it is a success.
func ToolCall(ctx context.Context, c Client, params json.RawMessage) (Result, error) {
	raw, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("malformed result: %w", err)
	}
	if r.IsError {
		return r, fmt.Errorf("isError result: %.300s", raw)
	}
	return r, nil
}

// frame returns a JSON-RPC message: a request, or a notification for id 0.
func frame(id int64, method string, params json.RawMessage) []byte {
	b := []byte(`{"jsonrpc":"2.0"`)
	if id != 0 {
		b = fmt.Appendf(b, `,"id":%d`, id)
	}
	b = fmt.Appendf(b, `,"method":%q`, method)
	if params != nil {
		b = append(append(append(b, `,"params":`...), params...), '}')
	} else {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// reply is a response as the clients read it.
type reply struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeReply decodes one message; ok is false unless it is a response
// with a numeric id (not a notification, not a request of the server).
func decodeReply(data []byte) (r reply, ok bool) {
	if json.Unmarshal(data, &r) != nil || r.ID == nil || r.Method != "" {
		return r, false
	}
	return r, true
}

// outcome returns the result of r, or its error.
func (r reply) outcome() (json.RawMessage, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("error %d: %s", r.Error.Code, r.Error.Message)
	}
	return r.Result, nil
}

// Stdio speaks newline-delimited JSON-RPC on a server's stdin and stdout.
// A reader goroutine hands each response to the call waiting on its id; it
// never waits on a writer, so a server blocked on its stdout cannot hold
// up the requests.
type Stdio struct {
	writers atomic.Int64 // calls in write, waiting or writing
	wmu     sync.Mutex   // guards w
	w       *bufio.Writer

	mu      sync.Mutex // guards the fields below
	nextID  int64
	pending map[int64]chan reply
	ended   error // why no more responses will come
}

// NewStdio starts reading responses from r; w takes the requests.
func NewStdio(w io.Writer, r io.Reader) *Stdio {
	c := &Stdio{w: bufio.NewWriterSize(w, 64<<10), pending: map[int64]chan reply{}}
	go c.read(r)
	return c
}

// read delivers responses until r ends, then fails every pending call.
func (c *Stdio) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		rep, ok := decodeReply(sc.Bytes())
		if !ok {
			continue
		}
		c.mu.Lock()
		ch := c.pending[*rep.ID]
		delete(c.pending, *rep.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = errors.New("the server closed its stdout")
	for id, ch := range c.pending {
		delete(c.pending, id)
		close(ch)
	}
}

// Call implements Client.
func (c *Stdio) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.ended != nil {
		c.mu.Unlock()
		return nil, c.ended
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(frame(id, method, params)); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, c.ended
		}
		return r.outcome()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Notify implements Client.
func (c *Stdio) Notify(_ context.Context, method string) error {
	return c.write(frame(0, method, nil))
}

// write sends msg, together with those of calls waiting to write: the last
// writer flushes them all.
func (c *Stdio) write(msg []byte) error {
	c.writers.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(msg)
	if c.writers.Add(-1) == 0 && err == nil {
		err = c.w.Flush()
	}
	return err
}

// Close does nothing: the session ends with the server process.
func (c *Stdio) Close() {}

// HTTP speaks Streamable HTTP to the server at URL: in one session of the
// 2025-11-25 era, which Initialize opens, or, with Modern set, in requests
// of the 2026-07-28 era, which need none.
type HTTP struct {
	Client *http.Client
	URL    string
	Modern bool

	sid    string // set by initialize
	nextID atomic.Int64
}

// post sends msg and returns the response, whose body the caller must
// close.
func (c *HTTP) post(ctx context.Context, method string, params, msg []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	switch {
	case c.Modern:
		req.Header.Set("MCP-Protocol-Version", Modern)
		req.Header.Set("Mcp-Method", method)
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(params, &p) == nil && p.Name != "" {
			req.Header.Set("Mcp-Name", p.Name)
		}
	case c.sid != "":
		c.sessionHeaders(req)
	}
	return c.Client.Do(req)
}

func (c *HTTP) sessionHeaders(req *http.Request) {
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", Legacy)
}

// Call implements Client. It reads the response from a JSON body or, in
// an event stream, from the event that carries the request's id.
func (c *HTTP) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	resp, err := c.post(ctx, method, params, frame(id, method, params))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d: %.300s", method, resp.StatusCode, body)
	}
	if method == "initialize" {
		c.sid = resp.Header.Get("Mcp-Session-Id")
	}
	msgs := [][]byte{body}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msgs = nil
		for line := range bytes.Lines(body) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				msgs = append(msgs, data)
			}
		}
	}
	for _, m := range msgs {
		if r, ok := decodeReply(m); ok && *r.ID == id {
			return r.outcome()
		}
	}
	return nil, fmt.Errorf("%s: no response with id %d in %.300s", method, id, body)
}

// Notify implements Client.
func (c *HTTP) Notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, method, nil, frame(0, method, nil))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s: status %d", method, resp.StatusCode)
	}
	return nil
}

// Close ends a session with DELETE and lets the connections go.
func (c *HTTP) Close() {
	defer c.Client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodDelete, c.URL, nil)
	if err != nil || c.sid == "" {
		return
	}
	c.sessionHeaders(req)
	if resp, err := c.Client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
