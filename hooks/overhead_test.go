package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/internal/overhead"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
)

// The overhead benchmark compares a call through the server with every
// lifecycle stage on, none of them refusing, answering from the cache or
// retrying, with the same call through the same server without any stage.
// Both are driven through mcp-go's HandleMessage in-process with the same
// request bytes, and each call ends with its response encoded as a
// transport encodes it, as server's TestPipelineOverhead does.

var overheadRequests = map[string][]byte{
	"setup_plan":  []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"Ship it","initial_steps":["draft","review","publish"]}}}`),
	"update_step": []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"planning_update_step","arguments":{"step_id":2,"status":"in_progress"}}}`),
}

// allOn is a configuration with every stage on and none firing for the
// planning tools called by the benchmark.
func allOn(dir string) Config {
	cfg := Defaults()
	cfg.Authorise = AuthoriseConfig{Allow: []string{"scope:plan", "subject:bench"}, Deny: []string{"subject:mallory"}}
	cfg.RateLimit = RateLimitConfig{Rate: 1e9, Burst: 1 << 30, Quota: 1 << 62}
	cfg.Concurrency = ConcurrencyConfig{MaxInFlight: 64}
	cfg.Cache = CacheConfig{Enabled: true}
	cfg.Retry = RetryConfig{Enabled: true}
	cfg.Output = OutputConfig{Redact: []string{`sk-[A-Za-z0-9]{20,}`, `ghp_[A-Za-z0-9]{36}`}, Validate: true, MaxTextBytes: 100 << 10}
	cfg.Audit = AuditConfig{Log: true, File: filepath.Join(dir, "audit.jsonl"), Fsync: FsyncInterval}
	cfg.Tools = map[string]ToolConfig{
		"planning_setup_plan":  {RateLimit: &ToolRateLimitConfig{Rate: 1e9, Burst: 1 << 30, Quota: 1 << 62}, Concurrency: &ConcurrencyConfig{MaxInFlight: 16}},
		"planning_update_step": {RateLimit: &ToolRateLimitConfig{Rate: 1e9, Burst: 1 << 30, Quota: 1 << 62}, Concurrency: &ConcurrencyConfig{MaxInFlight: 16}},
	}
	return cfg
}

// benchServer is a server for the benchmark, and its stages, if any.
type benchServer struct {
	*mcpserver.MCPServer
	hooks *Hooks
}

// settle writes the audit records still pending, so that a round of calls
// is charged for all of its work.
func (s *benchServer) settle() {
	if s.hooks != nil && s.hooks.audit != nil {
		s.hooks.audit.flush()
	}
}

// planningServer returns the server with the planning section and, when
// cfg is not nil, the stages it configures. The logger formats every
// record (JSON) and throws it away, as a real one would format it.
func planningServer(tb testing.TB, cfg *Config) *benchServer {
	bs := &benchServer{}
	tree, err := sections.NewTree(planning.New(planning.React))
	if err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	opts := server.Options{Name: "wink", Version: "1", Tree: tree, Logger: logger}
	if cfg != nil {
		cfg.Logger = logger
		h, err := New(*cfg, tree.Tools())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { h.Close() })
		opts.Stages, opts.ToolFilter = wire(h), h.Visible
		bs.hooks = h
	}
	srv, err := server.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	bs.MCPServer = srv.MCP()
	return bs
}

func runOverheadCalls(b *testing.B, s *benchServer, req []byte) {
	ctx := s.WithContext(as("bench", "plan"), newClientSession("bench"))
	s.HandleMessage(ctx, overheadRequests["setup_plan"]) // every tool needs a plan
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call(b, s.MCPServer, ctx, req)
	}
	s.settle()
}

// call makes one successful call of req and encodes its response.
func call(tb testing.TB, s *mcpserver.MCPServer, ctx context.Context, req []byte) {
	out := s.HandleMessage(ctx, req)
	if r, ok := out.(mcp.JSONRPCResponse); !ok || r.Result.(*mcp.CallToolResult).IsError {
		tb.Fatalf("call failed: %#v", out)
	}
	if _, err := json.Marshal(out); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkHooks(b *testing.B) {
	for _, tool := range []string{"setup_plan", "update_step"} {
		b.Run("none/"+tool, func(b *testing.B) { runOverheadCalls(b, planningServer(b, nil), overheadRequests[tool]) })
		b.Run("all/"+tool, func(b *testing.B) {
			cfg := allOn(b.TempDir())
			runOverheadCalls(b, planningServer(b, &cfg), overheadRequests[tool])
		})
	}
}

// TestHooksOverhead measures the server with every stage on (none firing)
// against the server with none, and reports the ratios of their total
// times (internal/overhead): wall-clock time, and CPU time (user and
// system, all threads, so garbage collection and the audit's writes
// count). A round ends when the audit records of its calls are written.
// It only reports; it asserts nothing about timing. Run it with
//
//	WINK_OVERHEAD=1 go test -run TestHooksOverhead -v ./hooks/
func TestHooksOverhead(t *testing.T) {
	if os.Getenv("WINK_OVERHEAD") == "" {
		t.Skip("set WINK_OVERHEAD=1 to measure")
	}
	// Collect garbage as the binary does (main.defaultGCPercent).
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	configs := []struct {
		name string
		cfg  func(t *testing.T) *Config
	}{
		{"all stages", func(t *testing.T) *Config { c := allOn(t.TempDir()); return &c }},
		{"all, audit to the log only", func(t *testing.T) *Config {
			c := allOn(t.TempDir())
			c.Audit.File = ""
			return &c
		}},
		{"all but the audit", func(t *testing.T) *Config {
			c := allOn(t.TempDir())
			c.Audit = AuditConfig{}
			return &c
		}},
	}
	for _, tool := range []string{"setup_plan", "update_step"} {
		for _, c := range configs {
			wall, cpu := compareServers(t, c.cfg, overheadRequests[tool])
			t.Logf("%-12s %-27s wall ratio %.3f  cpu ratio %.3f", tool, c.name, wall, cpu)
			fmt.Printf("hooks overhead %s %q wall_ratio=%.3f cpu_ratio=%.3f\n", tool, c.name, wall, cpu)
		}
	}
}

// compareServers makes calls of req on servers with the stages cfg
// configures and on servers without any, in rounds on fresh pairs of them,
// and returns the ratios of their total wall-clock and CPU times.
func compareServers(t *testing.T, cfg func(t *testing.T) *Config, req []byte) (wall, cpu float64) {
	setup := func(stages bool) overhead.Setup {
		return func() func(int) {
			var c *Config
			if stages {
				c = cfg(t)
			}
			s := planningServer(t, c)
			ctx := start(t, s, req)
			return func(n int) { makeCalls(t, s, ctx, req, n) }
		}
	}
	wall, cpu, err := overhead.Compare(5, 8, 2000, setup(false), setup(true))
	if err != nil {
		t.Fatal(err)
	}
	return wall, cpu
}

// start opens a session on s with a plan, warms it up and returns its
// context.
func start(t *testing.T, s *benchServer, req []byte) context.Context {
	ctx := s.WithContext(as("bench", "plan"), newClientSession("bench"))
	s.HandleMessage(ctx, overheadRequests["setup_plan"])
	for range 500 {
		s.HandleMessage(ctx, req)
	}
	s.settle()
	return ctx
}

// makeCalls makes n calls and waits for their audit records to be written.
func makeCalls(t *testing.T, s *benchServer, ctx context.Context, req []byte, n int) {
	for range n {
		call(t, s.MCPServer, ctx, req)
	}
	s.settle()
}
