package main

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

// protocolVersion is the MCP protocol version the clients speak.
const protocolVersion = "2025-11-25"

// A client speaks JSON-RPC to one MCP session.
type client interface {
	// call sends a request and returns its result; an error response is
	// an error.
	call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// notify sends a notification without parameters.
	notify(ctx context.Context, method string) error
	// close ends the session.
	close()
}

// initialize opens the session of c: the initialize request, then the
// initialized notification.
func initialize(ctx context.Context, c client) error {
	params := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"bench-load","version":"1"}}`, protocolVersion)
	if _, err := c.call(ctx, "initialize", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return c.notify(ctx, "notifications/initialized")
}

// toolCall makes one tools/call with params and fails unless the result is
// a success.
func toolCall(ctx context.Context, c client, params json.RawMessage) error {
	result, err := c.call(ctx, "tools/call", params)
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return fmt.Errorf("malformed result: %w", err)
	}
	if r.IsError {
		return fmt.Errorf("isError result: %.300s", result)
	}
	return nil
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

// stdioClient speaks newline-delimited JSON-RPC on a server's stdin and
// stdout. A reader goroutine hands each response to the call waiting on its
// id; it never waits on a writer, so a server blocked on its stdout cannot
// hold up the requests.
type stdioClient struct {
	writers atomic.Int64 // calls in write, waiting or writing
	wmu     sync.Mutex   // guards w
	w       *bufio.Writer

	mu      sync.Mutex // guards the fields below
	nextID  int64
	pending map[int64]chan reply
	ended   error // why no more responses will come
}

// newStdioClient starts reading responses from r; w takes the requests.
func newStdioClient(w io.Writer, r io.Reader) *stdioClient {
	c := &stdioClient{w: bufio.NewWriterSize(w, 64<<10), pending: map[int64]chan reply{}}
	go c.read(r)
	return c
}

// read delivers responses until r ends, then fails every pending call.
func (c *stdioClient) read(r io.Reader) {
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

func (c *stdioClient) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
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

func (c *stdioClient) notify(_ context.Context, method string) error {
	return c.write(frame(0, method, nil))
}

// write sends msg, together with those of calls waiting to write: the last
// writer flushes them all.
func (c *stdioClient) write(msg []byte) error {
	c.writers.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(msg)
	if c.writers.Add(-1) == 0 && err == nil {
		err = c.w.Flush()
	}
	return err
}

// close does nothing: the session ends with the server process.
func (c *stdioClient) close() {}

// httpClient speaks Streamable HTTP to one session of the server at url.
type httpClient struct {
	hc     *http.Client
	url    string
	sid    string // set by initialize
	nextID atomic.Int64
}

// post sends msg in the session and returns the response, whose body the
// caller must close.
func (c *httpClient) post(ctx context.Context, msg []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.sessionHeaders(req)
	return c.hc.Do(req)
}

func (c *httpClient) sessionHeaders(req *http.Request) {
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
	}
}

// call reads the response from a JSON body or, in an event stream, from
// the event that carries the request's id.
func (c *httpClient) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	resp, err := c.post(ctx, frame(id, method, params))
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

func (c *httpClient) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, frame(0, method, nil))
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

// close ends the session with DELETE and lets its connections go.
func (c *httpClient) close() {
	defer c.hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil || c.sid == "" {
		return
	}
	c.sessionHeaders(req)
	if resp, err := c.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
