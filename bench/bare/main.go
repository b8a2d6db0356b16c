// Command bare is a minimal mcp-go server used as the baseline for load
// measurements of wink-mcp.
//
// It registers two tools and nothing else: no input validation, no
// middleware, no hooks. The echo tool returns its "text" argument, and the
// setup_plan tool builds a small in-memory plan, kept per session (one over
// stdio, one per Mcp-Session-Id over HTTP), and returns its text rendering,
// so that a load run can compare both the bare protocol cost and the cost
// of comparable work.
//
// Usage:
//
//	bare                 serve MCP over stdio
//	bare --http ADDR     serve MCP Streamable HTTP at /mcp on ADDR
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// plan is the in-memory plan built by the setup_plan tool.
type plan struct {
	objective string
	status    string
	steps     []step
}

// step is one numbered step of a plan.
type step struct {
	number int
	status string
	title  string
}

// render returns the text form of the plan: the objective, the status and
// one line per step.
func (p *plan) render() string {
	var b strings.Builder
	b.WriteString("Objective: ")
	b.WriteString(p.objective)
	b.WriteString("\nStatus: ")
	b.WriteString(p.status)
	b.WriteString("\n")
	if len(p.steps) > 0 {
		b.WriteString("\n")
	}
	for i, s := range p.steps {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(strconv.Itoa(s.number))
		b.WriteString(" [")
		b.WriteString(s.status)
		b.WriteString("] ")
		b.WriteString(s.title)
	}
	return b.String()
}

// planStore holds the current plan of each session behind a mutex.
type planStore struct {
	mu      sync.Mutex
	current map[string]*plan // by session ID
}

// setup replaces the current plan of session id with a new active plan
// whose steps are all pending, and returns its rendering.
func (s *planStore) setup(id, objective string, steps []string) string {
	p := &plan{objective: objective, status: "active", steps: make([]step, len(steps))}
	for i, title := range steps {
		p.steps[i] = step{number: i + 1, status: "pending", title: title}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current[id] = p
	return p.render()
}

// newServer returns the bare MCP server with the echo and setup_plan tools.
func newServer() *server.MCPServer {
	s := server.NewMCPServer("bare", "0.1.0", server.WithToolCapabilities(false))

	s.AddTool(
		mcp.NewTool("echo",
			mcp.WithDescription("Return the given text."),
			mcp.WithString("text", mcp.Required(), mcp.Description("Text to return.")),
		),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		},
	)

	store := &planStore{current: map[string]*plan{}}
	s.AddTool(
		mcp.NewTool("setup_plan",
			mcp.WithDescription("Create a plan with an objective and pending steps, and return it."),
			mcp.WithString("objective", mcp.Required(), mcp.Description("What the plan is for.")),
			mcp.WithArray("initial_steps", mcp.WithStringItems(), mcp.Description("Titles of the initial steps.")),
		),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := ""
			if cs := server.ClientSessionFromContext(ctx); cs != nil {
				id = cs.SessionID()
			}
			text := store.setup(id, req.GetString("objective", ""), req.GetStringSlice("initial_steps", nil))
			return mcp.NewToolResultText(text), nil
		},
	)
	return s
}

func main() {
	httpAddr := flag.String("http", "", "serve Streamable HTTP at /mcp on this address instead of stdio")
	flag.Parse()

	log.SetOutput(os.Stderr)
	s := newServer()

	if *httpAddr != "" {
		h := server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp"))
		fmt.Fprintf(os.Stderr, "bare: serving Streamable HTTP on %s/mcp\n", *httpAddr)
		if err := h.Start(*httpAddr); err != nil {
			log.Fatalf("bare: %v", err)
		}
		return
	}
	if err := server.ServeStdio(s, server.WithErrorLogger(log.New(os.Stderr, "bare: ", log.LstdFlags))); err != nil {
		log.Fatalf("bare: %v", err)
	}
}
