package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wink-mcp/wink-mcp/identity"
)

// TestHookModel drives the binary with a configuration that turns on the
// planning section's reminder of pending steps for some tools, placed by
// priority after the deadline reminder; turns a tool off for the local
// user, the stdio client's principal; and turns the reminder off for the
// sessions named ci-*. The official Go SDK in its default mode, a client
// of the 2026-07-28 era, sees the same.
func TestHookModel(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "wink.yaml")
	user := identity.Local().Subject
	yaml := fmt.Sprintf(`sections: [planning]
hooks:
  deadline_reminder: {session: 5m, within: 10m}
  stages:
    plan_reminder:
      enabled: true
      priority: 1
      filter: {tools: ["planning_setup_plan", "planning_*_step"]}
  flags:
    - principals: [%q]
      tools: {planning_add_step: false}
    - sessions: ["ci-*"]
      hooks: {plan_reminder: false}
`, "subject:"+user)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	p := start(t, dir, "--config", config, "--store", "memory")
	p.initialize()
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	f := p.call(1, "tools/list", nil)
	if err := json.Unmarshal(f.Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"planning_setup_plan", "planning_update_step", "planning_read_plan"}; !slices.Equal(names, want) {
		t.Errorf("tools/list %v, want %v (planning_add_step turned off)", names, want)
	}

	tests := []struct {
		name, tool string
		args       map[string]any
		isError    bool
		blocks     []string // prefixes of the blocks after the first
		first      string   // prefix of the first block
	}{
		{"a tool turned off", "planning_add_step", map[string]any{"steps": []string{"c"}}, true, []string{"5 minutes to the deadline ("},
			"Not authorised to call 'planning_add_step': it is turned off for subject " + user + "."},
		{"both reminders, by priority", "planning_setup_plan", map[string]any{"objective": "Ship", "initial_steps": []string{"a", "b"}}, false,
			[]string{"5 minutes to the deadline (", "The plan has 2 pending steps."}, "Plan initialised with 2 steps."},
		{"filtered out", "planning_read_plan", map[string]any{}, false,
			[]string{"5 minutes to the deadline ("}, "Retrieved the current plan"},
		{"a step in progress", "planning_update_step", map[string]any{"step_id": 1, "status": "in_progress"}, false,
			[]string{"5 minutes to the deadline (", "The plan has 1 pending step and 1 in progress."}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeToolResult(t, p.call(10+i, "tools/call", callTool(tt.tool, tt.args)))
			if r.IsError != tt.isError || !strings.HasPrefix(r.Content[0].Text, tt.first) {
				t.Fatalf("isError %v, %q; want isError %v, %q", r.IsError, r.Content[0].Text, tt.isError, tt.first)
			}
			if len(r.Content)-1 != len(tt.blocks) {
				t.Fatalf("%d blocks after the first, want %d: %+v", len(r.Content)-1, len(tt.blocks), r.Content)
			}
			for j, want := range tt.blocks {
				if got := r.Content[j+1].Text; r.Content[j+1].Type != "text" || !strings.HasPrefix(got, want) {
					t.Errorf("block %d: %q, want %q", j+1, got, want)
				}
			}
		})
	}

	// A session named ci-1 gets no plan reminder.
	ci := start(t, dir, "--config", config, "--store", "memory", "--session", "ci-1")
	ci.initialize()
	r := decodeToolResult(t, ci.call(1, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": "CI", "initial_steps": []string{"a"}})))
	if r.IsError || len(r.Content) != 2 || !strings.HasPrefix(r.Content[1].Text, "5 minutes to the deadline (") {
		t.Errorf("in session ci-1: %+v, want the deadline reminder alone", r.Content)
	}

	// The official Go SDK, 2026-07-28: the tool is not listed and is
	// refused, and the reminders follow a result.
	cmd := exec.Command(binary, "--config", config, "--store", "memory")
	cmd.Dir = dir
	sdk := connectSDK(t, &mcp.CommandTransport{Command: cmd}, "")
	tl, err := sdk.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(tl.Tools, func(tool *mcp.Tool) bool { return tool.Name == "planning_add_step" }) {
		t.Error("the Go SDK lists planning_add_step, turned off")
	}
	if r := sdk.call(t, "planning_add_step", map[string]any{"steps": []string{"c"}}); !r.IsError || !strings.HasPrefix(r.text(), "Not authorised to call 'planning_add_step'") {
		t.Errorf("the Go SDK, a tool turned off: %+v", r)
	}
	if r := sdk.call(t, "planning_setup_plan", map[string]any{"objective": "Ship", "initial_steps": []string{"a", "b"}}); len(r.Content) != 3 || !strings.HasPrefix(r.Content[2].Text, "The plan has 2 pending steps.") {
		t.Errorf("the Go SDK, both reminders: %+v", r.Content)
	}
}
