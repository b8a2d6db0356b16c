package planning

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestRemindPending(t *testing.T) {
	tests := []struct {
		name  string
		steps []StepStatus
		plan  bool
		want  string
	}{
		{"no plan", nil, false, ""},
		{"no steps", nil, true, ""},
		{"all done", []StepStatus{Done, Done}, true, ""},
		{"one pending", []StepStatus{Done, Pending}, true, "The plan has 1 pending step."},
		{"pending", []StepStatus{Pending, Pending}, true, "The plan has 2 pending steps."},
		{"in progress", []StepStatus{InProgress, Done}, true, "The plan has 1 step in progress."},
		{"both", []StepStatus{InProgress, Pending, Pending, Done}, true, "The plan has 2 pending steps and 1 in progress."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := session.NewRegistry()
			setup(r)
			s, err := r.NewSession("s1")
			if err != nil {
				t.Fatal(err)
			}
			if tt.plan {
				p := &Plan{Objective: "o"}
				for i, st := range tt.steps {
					p.Steps = append(p.Steps, Step{ID: i + 1, Title: "s", Status: st})
				}
				session.Set(s, State, p.withStatus())
			}
			handler := RemindPending(func(context.Context, *tools.Call) *tools.Outcome {
				return &tools.Outcome{Message: "Done.", Success: true}
			})
			out := handler(context.Background(), &tools.Call{Session: s})
			var got string
			for _, c := range out.Content {
				got += c.(mcp.TextContent).Text
			}
			if len(out.Content) > 1 || got != tt.want {
				t.Errorf("added %d blocks, %q, want %q", len(out.Content), got, tt.want)
			}
		})
	}
}
