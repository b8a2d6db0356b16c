package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestSequentialDependency(t *testing.T) {
	deps := map[string][]string{
		"deploy":  {"test", "build", "lint"},
		"release": {"deploy"},
	}
	tests := []struct {
		name      string
		succeeded []string // tools whose success is reported, in order
		check     string
		want      string // "" means allowed
	}{
		{"all missing, sorted", nil, "deploy", "Tool 'deploy' requires: build, lint, test"},
		{"one done", []string{"build"}, "deploy", "Tool 'deploy' requires: lint, test"},
		{"two done", []string{"test", "build"}, "deploy", "Tool 'deploy' requires: lint"},
		{"all done", []string{"test", "build", "lint"}, "deploy", ""},
		{"repeated success counts once", []string{"build", "build", "lint", "test"}, "deploy", ""},
		{"chained dependency", []string{"build"}, "release", "Tool 'release' requires: deploy"},
		{"chained dependency met", []string{"deploy"}, "release", ""},
		{"a dependency itself is free", nil, "build", ""},
		{"an ungoverned tool is free", nil, "other", ""},
		{"an ungoverned tool's success is not recorded as a dependency", []string{"other"}, "deploy", "Tool 'deploy' requires: build, lint, test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.NewSequentialDependency(deps)
			s := newSession(t)
			for _, name := range tt.succeeded {
				call := &tools.Call{Tool: newTool(t, name), Session: s}
				if err := p.OnResult(call, &tools.Outcome{Success: true}); err != nil {
					t.Fatalf("OnResult(%s): %v", name, err)
				}
			}
			err := p.Check(&tools.Call{Tool: newTool(t, tt.check), Session: s})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tt.check, err)
				}
				return
			}
			var d *policy.Denial
			if !errors.As(err, &d) {
				t.Fatalf("Check(%s) = %v (%T), want a *policy.Denial", tt.check, err, err)
			}
			if d.Reason != tt.want || err.Error() != tt.want {
				t.Errorf("Check(%s) = %q, want %q", tt.check, err, tt.want)
			}
			if d.Policy != "sequential_dependency" {
				t.Errorf("denial by %q, want sequential_dependency", d.Policy)
			}
		})
	}
}

func TestSequentialDependencyTools(t *testing.T) {
	p := policy.NewSequentialDependency(map[string][]string{"deploy": {"test", "build"}, "ship": {"deploy"}})
	if got, want := p.Tools(), []string{"build", "deploy", "ship", "test"}; !slices.Equal(got, want) {
		t.Errorf("Tools() = %q, want %q", got, want)
	}
	if p.Name() != "sequential_dependency" {
		t.Errorf("Name() = %q", p.Name())
	}
}

// TestSequentialDependencyRecordsOnlyGovernedTools uses two policies,
// which share the session's memory of successes: a success of a tool that
// the first does not govern is recorded only by the second.
func TestSequentialDependencyRecordsOnlyGovernedTools(t *testing.T) {
	first := policy.NewSequentialDependency(map[string][]string{"deploy": {"build"}})
	second := policy.NewSequentialDependency(map[string][]string{"release": {"lint"}})
	s := newSession(t)
	lint := &tools.Call{Tool: newTool(t, "lint"), Session: s}
	release := &tools.Call{Tool: newTool(t, "release"), Session: s}

	if err := first.OnResult(lint, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	if err := second.Check(release); err == nil || err.Error() != "Tool 'release' requires: lint" {
		t.Fatalf("after an ungoverned success: Check = %v, want the denial", err)
	}
	if err := second.OnResult(lint, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	if err := second.Check(release); err != nil {
		t.Errorf("after a governed success: Check = %v, want allowed", err)
	}
}

func TestSequentialDependencyIsPerSession(t *testing.T) {
	p := policy.NewSequentialDependency(map[string][]string{"deploy": {"build"}})
	a, b := newSession(t), newSession(t)
	if err := p.OnResult(&tools.Call{Tool: newTool(t, "build"), Session: a}, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(&tools.Call{Tool: newTool(t, "deploy"), Session: a}); err != nil {
		t.Errorf("session a: %v", err)
	}
	if err := p.Check(&tools.Call{Tool: newTool(t, "deploy"), Session: b}); err == nil {
		t.Error("session b was allowed by session a's build")
	}
}

func TestSequentialDependencyRollsBack(t *testing.T) {
	p := policy.NewSequentialDependency(map[string][]string{"deploy": {"build", "test"}})
	s := newSession(t)
	build := &tools.Call{Tool: newTool(t, "build"), Session: s}
	deploy := &tools.Call{Tool: newTool(t, "deploy"), Session: s}

	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.OnResult(build, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(deploy); err == nil || err.Error() != "Tool 'deploy' requires: test" {
		t.Fatalf("inside the transaction: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(deploy); err == nil || err.Error() != "Tool 'deploy' requires: build, test" {
		t.Errorf("after Rollback: Check = %v, want build forgotten", err)
	}

	// Committed successes stay.
	tx, err = s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.OnResult(build, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	if err := p.Check(deploy); err == nil || err.Error() != "Tool 'deploy' requires: test" {
		t.Errorf("after Commit: Check = %v, want only test missing", err)
	}
}

// TestSequentialDependencyThroughPipeline runs real tools through the
// middleware and a transaction: a denied call does not run, a failed call
// does not count as a success, a successful one does.
func TestSequentialDependencyThroughPipeline(t *testing.T) {
	p := policy.NewSequentialDependency(map[string][]string{"deploy": {"build"}})
	ps := []policy.Policy{p}
	s := newSession(t)
	fail := true
	build := tools.New("build", "Builds.", tools.Annotations{Title: "Build"},
		func(*tools.Context, noParams) (tools.Result[any], error) {
			if fail {
				return tools.Fail[any]("Build broke."), nil
			}
			return tools.OK[any]("Built.", nil), nil
		})
	deployed := 0
	deploy := tools.New("deploy", "Deploys.", tools.Annotations{Title: "Deploy"},
		func(*tools.Context, noParams) (tools.Result[any], error) {
			deployed++
			return tools.OK[any]("Deployed.", nil), nil
		})
	call := func(tl *tools.Tool) *tools.Outcome {
		return pipeline(t, ps, &tools.Call{Tool: tl, Session: s, Params: noParams{}})
	}

	steps := []struct {
		tool *tools.Tool
		fail bool
		want string
	}{
		{deploy, false, "Tool 'deploy' requires: build"},
		{build, true, "Build broke."},
		{deploy, false, "Tool 'deploy' requires: build"},
		{build, false, "Built."},
		{deploy, false, "Deployed."},
	}
	for i, st := range steps {
		fail = st.fail
		o := call(st.tool)
		if o.Text() != st.want {
			t.Errorf("step %d (%s): %q, want %q", i, st.tool.Name(), o.Text(), st.want)
		}
		if strings.HasPrefix(st.want, "Tool '") && o.Class != tools.ClassPolicy {
			t.Errorf("step %d: class %q, want policy", i, o.Class)
		}
	}
	if deployed != 1 {
		t.Errorf("deploy handler ran %d times, want 1", deployed)
	}
}
