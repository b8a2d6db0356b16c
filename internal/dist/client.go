package dist

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// Client speaks MCP over stdio to a server process, one JSON-RPC message a
// line, as a desktop host does (mcpc.Stdio), and quotes the process's
// standard error in its errors.
type Client struct {
	p   *mcpc.Process
	rpc *mcpc.Stdio
}

// Start starts cmd with its standard input and output connected to a new
// Client.
func Start(cmd *exec.Cmd) (*Client, error) {
	p, rpc, err := mcpc.StartStdioCmd(cmd)
	if err != nil {
		return nil, err
	}
	return &Client{p: p, rpc: rpc}, nil
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
		return nil, c.p.Explain(fmt.Errorf("%s: %w", method, err))
	}
	return res, nil
}

// Close closes the server's standard input, which ends a stdio server,
// and waits for it to exit (killing it after closeWait). It returns an
// error if the server did not exit by itself with status 0.
func (c *Client) Close() error {
	if err := c.p.Stop(closeWait); err != nil {
		return err
	}
	if err := c.p.ExitErr(); err != nil {
		return c.p.Explain(fmt.Errorf("the server exited with %v", err))
	}
	return nil
}

// closeWait is how long Close waits for the server to exit.
const closeWait = 30 * time.Second
