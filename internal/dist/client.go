package dist

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// Client speaks MCP over stdio to a server process, one JSON-RPC message a
// line, as a desktop host does: it sends requests one at a time and reads
// lines until the response to each, answering a request from the server
// with "method not found" and skipping notifications.
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *bytes.Buffer
	lastID int
	mu     sync.Mutex // serialises requests
}

// Start starts cmd with its standard input and output connected to a new
// Client. Its standard error is kept for error messages.
func Start(cmd *exec.Cmd) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Client{cmd: cmd, stdin: stdin, lines: make(chan []byte, 16), stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: c.stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	return c, nil
}

// Initialize sends "initialize" with protocol version 2025-06-18, as
// Claude Desktop does, then "notifications/initialized", and returns the
// server's result.
func (c *Client) Initialize(ctx context.Context) (json.RawMessage, error) {
	res, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "wink-mcp-dist", "version": "1"},
	})
	if err != nil {
		return nil, err
	}
	return res, c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// Tools returns the server's tools, from tools/list (every page), each
// with the first sentence of its description.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var tools []Tool
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.Call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, fmt.Errorf("tools/list: %v", err)
		}
		for _, t := range page.Tools {
			tools = append(tools, Tool{Name: t.Name, Description: firstSentence(t.Description)})
		}
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = page.NextCursor
	}
}

// firstSentence returns s up to the end of its first sentence: a full
// stop followed by a space and a capital letter, or the first line break.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && 'A' <= s[i+2] && s[i+2] <= 'Z' {
			return s[:i+1]
		}
	}
	return strings.TrimSpace(s)
}

// Call sends the request method with params and returns its result, or the
// JSON-RPC error the server answered with as an error.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastID++
	id := c.lastID
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		var line []byte
		var ok bool
		select {
		case line, ok = <-c.lines:
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %v; server's stderr:\n%s", method, ctx.Err(), c.Stderr())
		}
		if !ok {
			return nil, fmt.Errorf("%s: the server closed its output; its stderr:\n%s", method, c.Stderr())
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("%s: the server wrote a line that is not JSON-RPC: %.200q", method, line)
		}
		switch {
		case msg.Method != "" && len(msg.ID) > 0 && string(msg.ID) != "null": // a request to the client
			err := c.send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			if err != nil {
				return nil, err
			}
		case msg.Method != "": // a notification
		case string(msg.ID) != fmt.Sprint(id):
			return nil, fmt.Errorf("%s: a response to id %s, want %d", method, msg.ID, id)
		case msg.Error != nil:
			return nil, fmt.Errorf("%s: error %d: %s", method, msg.Error.Code, msg.Error.Message)
		default:
			return msg.Result, nil
		}
	}
}

func (c *Client) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// Stderr returns what the server has written to its standard error.
func (c *Client) Stderr() string {
	lw := c.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return c.stderr.String()
}

// Close closes the server's standard input, which ends a stdio server,
// and waits for it to exit. It returns the exit error, if any.
func (c *Client) Close() error {
	err := c.stdin.Close()
	for range c.lines { // drain, so that the reader ends
	}
	if werr := c.cmd.Wait(); werr != nil {
		var exit *exec.ExitError
		if errors.As(werr, &exit) {
			return fmt.Errorf("the server exited with %v; its stderr:\n%s", werr, c.Stderr())
		}
		return werr
	}
	return err
}

// lockedWriter is an io.Writer safe for the process's stderr copier and
// Stderr to use at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
