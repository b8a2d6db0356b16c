package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/internal/overhead"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
)

// The benchmarks compare a call through the whole pipeline (validation,
// deadline, session lock, policies, transaction, log, rendering) with a
// bare mcp-go handler doing the same planning work, both driven through
// mcp-go's HandleMessage in-process with the same request bytes. A call
// ends with its response encoded, as a transport encodes it: request bytes
// in, response bytes out.

var benchRequests = map[string][]byte{
	"setup_plan":  []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"Ship it","initial_steps":["draft","review","publish"]}}}`),
	"update_step": []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"planning_update_step","arguments":{"step_id":2,"status":"in_progress"}}}`),
}

// winkServer returns the real server with the planning section.
func winkServer(tb testing.TB) *mcpserver.MCPServer {
	tree, err := sections.NewTree(planning.New(planning.React))
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "wink", Version: "1", Tree: tree, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	return srv.MCP()
}

// barePlan is the bare server's plan: the same work without the runtime.
type barePlan struct {
	mu    sync.Mutex
	plan  *planning.Plan
	steps int
}

// bareServer returns an mcp-go server whose two tools do the planning work
// by hand: bind the arguments, check them, replace the plan, render it.
func bareServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("bare", "1", mcpserver.WithToolCapabilities(false))
	st := &barePlan{}
	s.AddTool(mcp.NewTool("planning_setup_plan", mcp.WithDescription("setup"),
		mcp.WithString("objective", mcp.Required()), mcp.WithArray("initial_steps")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var p struct {
				Objective    string   `json:"objective"`
				InitialSteps []string `json:"initial_steps"`
			}
			if err := req.BindArguments(&p); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			obj := strings.TrimSpace(p.Objective)
			if obj == "" {
				return mcp.NewToolResultError("Objective must not be empty."), nil
			}
			plan := &planning.Plan{Objective: obj, Status: planning.Active}
			for i, t := range p.InitialSteps {
				plan.Steps = append(plan.Steps, planning.Step{ID: i + 1, Title: strings.TrimSpace(t), Status: planning.Pending})
			}
			st.mu.Lock()
			st.plan = plan
			st.mu.Unlock()
			return mcp.NewToolResultStructured(plan, fmt.Sprintf("Plan initialised with %d steps.\n\n%s", len(plan.Steps), plan.Render())), nil
		})
	s.AddTool(mcp.NewTool("planning_update_step", mcp.WithDescription("update"),
		mcp.WithNumber("step_id", mcp.Required()), mcp.WithString("status")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var p struct {
				StepID int                 `json:"step_id"`
				Status planning.StepStatus `json:"status"`
			}
			if err := req.BindArguments(&p); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.plan == nil {
				return mcp.NewToolResultError("No plan is currently initialised."), nil
			}
			plan := &planning.Plan{Objective: st.plan.Objective, Status: st.plan.Status, Steps: slices.Clone(st.plan.Steps)}
			for i := range plan.Steps {
				if plan.Steps[i].ID == p.StepID {
					plan.Steps[i].Status = p.Status
				}
			}
			st.plan = plan
			return mcp.NewToolResultStructured(plan, fmt.Sprintf("Step %d updated.\n\n%s", p.StepID, plan.Render())), nil
		})
	return s
}

func runCalls(b *testing.B, s *mcpserver.MCPServer, req []byte) {
	ctx := s.WithContext(context.Background(), newClientSession("bench"))
	// Every tool needs a plan to exist.
	s.HandleMessage(ctx, benchRequests["setup_plan"])
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		makeCalls(b, s, ctx, req, 1)
	}
}

func BenchmarkCall(b *testing.B) {
	for _, tool := range []string{"setup_plan", "update_step"} {
		b.Run("bare/"+tool, func(b *testing.B) { runCalls(b, bareServer(), benchRequests[tool]) })
		b.Run("wink/"+tool, func(b *testing.B) { runCalls(b, winkServer(b), benchRequests[tool]) })
	}
}

// TestPipelineOverhead measures both servers in short alternating rounds
// on fresh pairs of them within one run (internal/overhead) and reports the pipeline's cost
// per call as ratios to the bare handler: wall-clock and CPU time. It only
// reports; machines here are shared and noisy. Run it with
//
//	WINK_OVERHEAD=1 go test -run TestPipelineOverhead -v ./server/
func TestPipelineOverhead(t *testing.T) {
	if os.Getenv("WINK_OVERHEAD") == "" {
		t.Skip("set WINK_OVERHEAD=1 to measure")
	}
	// Collect garbage as the binary does (main.defaultGCPercent).
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	for _, tool := range []string{"setup_plan", "update_step"} {
		setup := func(newServer func() *mcpserver.MCPServer) overhead.Setup {
			return func() func(int) {
				s := newServer()
				ctx := openSession(t, s, benchRequests[tool])
				return func(n int) { makeCalls(t, s, ctx, benchRequests[tool], n) }
			}
		}
		wall, cpu, err := overhead.Compare(5, 8, 2000, setup(bareServer), setup(func() *mcpserver.MCPServer { return winkServer(t) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-12s wall ratio %.3f  cpu ratio %.3f", tool, wall, cpu)
		fmt.Printf("overhead %s wall_ratio=%.3f cpu_ratio=%.3f\n", tool, wall, cpu)
	}
}

// openSession opens a session on s with a plan, warms it up with req and
// returns its context.
func openSession(t *testing.T, s *mcpserver.MCPServer, req []byte) context.Context {
	ctx := s.WithContext(context.Background(), newClientSession("bench"))
	s.HandleMessage(ctx, benchRequests["setup_plan"])
	makeCalls(t, s, ctx, req, 500)
	return ctx
}

// makeCalls makes n successful calls of req, each ending with its response
// encoded.
func makeCalls(tb testing.TB, s *mcpserver.MCPServer, ctx context.Context, req []byte, n int) {
	for range n {
		out := s.HandleMessage(ctx, req)
		if r, ok := out.(mcp.JSONRPCResponse); !ok || r.Result.(*mcp.CallToolResult).IsError {
			tb.Fatalf("call failed: %#v", out)
		}
		if _, err := json.Marshal(out); err != nil {
			tb.Fatal(err)
		}
	}
}
