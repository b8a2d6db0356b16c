package dist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// Client speaks MCP over stdio to a server process, one JSON-RPC message a
// line, as a desktop host does (mcpc.Stdio), keeping the process's
// standard error for error messages.
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	rpc    *mcpc.Stdio
	stderr lockedBuffer
}

// Start starts cmd with its standard input and output connected to a new
// Client.
func Start(cmd *exec.Cmd) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Client{cmd: cmd, stdin: stdin}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.rpc = mcpc.NewStdio(stdin, stdout)
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
	return res, c.rpc.Notify(ctx, "notifications/initialized")
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
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	res, err := c.rpc.Call(ctx, method, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; server's stderr:\n%s", method, err, c.Stderr())
	}
	return res, nil
}

// Stderr returns what the server has written to its standard error.
func (c *Client) Stderr() string {
	c.stderr.mu.Lock()
	defer c.stderr.mu.Unlock()
	return c.stderr.b.String()
}

// Close closes the server's standard input, which ends a stdio server,
// and waits for it to exit. It returns the exit error, if any.
func (c *Client) Close() error {
	err := c.stdin.Close()
	if werr := c.cmd.Wait(); werr != nil {
		var exit *exec.ExitError
		if errors.As(werr, &exit) {
			return fmt.Errorf("the server exited with %v; its stderr:\n%s", werr, c.Stderr())
		}
		return werr
	}
	return err
}

// lockedBuffer keeps the server's standard error, which the process's
// copier writes while Stderr reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
