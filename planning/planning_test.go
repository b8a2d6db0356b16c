package planning_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

type session struct {
	t   *testing.T
	srv *server.Server
	c   *mcptest.Client
}

func newSession(t *testing.T, strategy planning.Strategy) *session {
	t.Helper()
	tree, err := sections.NewTree(planning.New(strategy))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "t", Version: "1", Tree: tree, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, srv: srv, c: mcptest.NewClient(t, srv.MCP(), t.Name())}
}

// call runs one tool call through the whole pipeline and returns its text,
// without the line that names the session, and whether it is an error.
func (s *session) call(tool, args string) (string, bool) {
	s.t.Helper()
	r := s.c.Call(context.Background(), tool, json.RawMessage(args), nil)
	return r.Said(), r.IsError
}

func plan(lines ...string) string { return "\n\n" + strings.Join(lines, "\n") }

// TestMessages walks through planning.md: every success message, every
// error text, and the plan left unchanged by every error.
func TestMessages(t *testing.T) {
	long := strings.Repeat("x", 501)
	steps := []struct {
		tool, args string
		want       string
		isErr      bool
	}{
		{"planning_read_plan", `{}`, "No plan is currently initialised.", true},
		{"planning_add_step", `{"steps":["a"]}`, "No plan is currently initialised.", true},
		{"planning_update_step", `{"step_id":1,"status":"done"}`, "No plan is currently initialised.", true},
		{"planning_setup_plan", `{"objective":"  "}`, "Objective must not be empty.", true},
		{"planning_setup_plan", `{"objective":"` + long + `"}`, "Objective must be <= 500 characters.", true},
		{"planning_setup_plan", `{"objective":"x","initial_steps":["ok"," "]}`, "Title must not be empty.", true},
		{"planning_setup_plan", `{"objective":"x","initial_steps":["` + long + `"]}`, "Title must be <= 500 characters.", true},
		{"planning_read_plan", `{}`, "No plan is currently initialised.", true},
		{"planning_setup_plan", `{"objective":"Empty"}`, "Plan initialised with 0 steps." + plan("Objective: Empty", "Status: active", "", "<no steps>"), false},
		{"planning_read_plan", `{}`, "Retrieved the current plan (no steps recorded)." + plan("Objective: Empty", "Status: active", "", "<no steps>"), false},
		{"planning_setup_plan", `{"objective":"One","initial_steps":["a"]}`, "Plan initialised with 1 step." + plan("Objective: One", "Status: active", "", "1 [pending] a"), false},
		{"planning_setup_plan", `{"objective":"  Ship it ","initial_steps":[" draft","review  "]}`, "Plan initialised with 2 steps." + plan("Objective: Ship it", "Status: active", "", "1 [pending] draft", "2 [pending] review"), false},
		{"planning_add_step", `{"steps":[]}`, "Provide at least one step to add.", true},
		{"planning_add_step", `{"steps":["ok"," "]}`, "Title must not be empty.", true},
		{"planning_add_step", `{"steps":["c","d","e"]}`, "Added 3 steps." + plan("Objective: Ship it", "Status: active", "", "1 [pending] draft", "2 [pending] review", "3 [pending] c", "4 [pending] d", "5 [pending] e"), false},
		{"planning_add_step", `{"steps":["f"]}`, "Added 1 step." + plan("Objective: Ship it", "Status: active", "", "1 [pending] draft", "2 [pending] review", "3 [pending] c", "4 [pending] d", "5 [pending] e", "6 [pending] f"), false},
		{"planning_update_step", `{"step_id":2}`, "Provide a new title or status to update a step.", true},
		{"planning_update_step", `{"step_id":99,"status":"done"}`, "Step 99 does not exist.", true},
		// Title validity is checked before "something to change" and before
		// the step's existence.
		{"planning_update_step", `{"step_id":99,"title":" "}`, "Title must not be empty.", true},
		{"planning_update_step", `{"step_id":2,"title":"` + long + `"}`, "Title must be <= 500 characters.", true},
		{"planning_update_step", `{"step_id":2,"title":" edit ","status":"in_progress"}`, "Step 2 updated." + plan("Objective: Ship it", "Status: active", "", "1 [pending] draft", "2 [in_progress] edit", "3 [pending] c", "4 [pending] d", "5 [pending] e", "6 [pending] f"), false},
		{"planning_read_plan", `{}`, "Retrieved the current plan with 6 steps." + plan("Objective: Ship it", "Status: active", "", "1 [pending] draft", "2 [in_progress] edit", "3 [pending] c", "4 [pending] d", "5 [pending] e", "6 [pending] f"), false},
		{"planning_setup_plan", `{"objective":"Short","initial_steps":["a","b"]}`, "Plan initialised with 2 steps." + plan("Objective: Short", "Status: active", "", "1 [pending] a", "2 [pending] b"), false},
		{"planning_update_step", `{"step_id":1,"status":"done"}`, "Step 1 updated." + plan("Objective: Short", "Status: active", "", "1 [done] a", "2 [pending] b"), false},
		{"planning_update_step", `{"step_id":2,"status":"done"}`, "Step 2 updated." + plan("Objective: Short", "Status: completed", "", "1 [done] a", "2 [done] b"), false},
		{"planning_add_step", `{"steps":["c"]}`, "Plan must be active. Current status: completed.", true},
		// "Plan active" is checked before the title and the step.
		{"planning_update_step", `{"step_id":99,"title":" "}`, "Plan must be active. Current status: completed.", true},
		{"planning_read_plan", `{}`, "Retrieved the current plan with 2 steps." + plan("Objective: Short", "Status: completed", "", "1 [done] a", "2 [done] b"), false},
	}
	s := newSession(t, planning.React)
	for i, st := range steps {
		got, isErr := s.call(st.tool, st.args)
		if got != st.want || isErr != st.isErr {
			t.Fatalf("step %d: %s %s\ngot  (isError=%v) %q\nwant (isError=%v) %q", i, st.tool, st.args, isErr, got, st.isErr, st.want)
		}
	}
}

// TestIDsNeverReused checks that new steps continue after the largest ID.
func TestIDsNeverReused(t *testing.T) {
	s := newSession(t, planning.React)
	s.call("planning_setup_plan", `{"objective":"o","initial_steps":["a","b","c"]}`)
	s.call("planning_update_step", `{"step_id":3,"title":"c2"}`)
	got, _ := s.call("planning_add_step", `{"steps":["d"]}`)
	if !strings.HasSuffix(got, "4 [pending] d") {
		t.Errorf("got %q, want step 4", got)
	}
}

// TestExamples runs the tools' examples in order and checks they print what
// the guidance promises.
func TestExamples(t *testing.T) {
	s := newSession(t, planning.React)
	for _, tool := range s.srv.Tools() {
		for _, ex := range tool.Examples() {
			got, isErr := s.call(tool.Name(), ex.Input)
			if isErr || got != ex.Output {
				t.Errorf("example %q of %s:\ngot  %q\nwant %q", ex.Description, tool.Name(), got, ex.Output)
			}
		}
	}
}

func TestRender(t *testing.T) {
	tests := map[string]*planning.Plan{
		"plan_active": {Objective: "Ship it", Status: planning.Active, Steps: []planning.Step{
			{ID: 1, Title: "draft", Status: planning.Pending}, {ID: 2, Title: "review", Status: planning.InProgress}}},
		"plan_empty":     {Objective: "Nothing yet", Status: planning.Active},
		"plan_completed": {Objective: "Done", Status: planning.Completed, Steps: []planning.Step{{ID: 3, Title: "only", Status: planning.Done}}},
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) { golden(t, name, p.Render()) })
	}
}

func TestGuidance(t *testing.T) {
	for _, st := range planning.Strategies() {
		t.Run(string(st), func(t *testing.T) {
			tree, err := sections.NewTree(planning.New(st))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "guidance_"+string(st), tree.Guidance())
		})
	}
}

func TestParseStrategy(t *testing.T) {
	tests := []struct {
		in      string
		want    planning.Strategy
		wantErr string
	}{
		{"", planning.React, ""},
		{"react", planning.React, ""},
		{"plan_act_reflect", planning.PlanActReflect, ""},
		{"goal_decompose_route_synthesise", planning.GoalDecomposeRouteSynthesise, ""},
		{"yolo", "", `unknown planning strategy "yolo" (want one of: react, plan_act_reflect, goal_decompose_route_synthesise)`},
	}
	for _, tt := range tests {
		got, err := planning.ParseStrategy(tt.in)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("ParseStrategy(%q) = %q, %v", tt.in, got, err)
		}
	}
}
