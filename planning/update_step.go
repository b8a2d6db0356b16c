package planning

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// UpdateStepParams are the arguments of planning_update_step.
type UpdateStepParams struct {
	StepID int        `json:"step_id" jsonschema:"The ID of the step to update."`
	Title  *string    `json:"title,omitempty" jsonschema:"The step's new title; 1 to 500 characters."`
	Status StepStatus `json:"status,omitempty" jsonschema:"The step's new status."`
}

func updateStep() *tools.Tool {
	return tools.New("planning_update_step",
		"Update a step's title or status by its ID.",
		tools.Annotations{Title: "Update plan step", Idempotent: true},
		func(ctx *tools.Context, p UpdateStepParams) (tools.Result[*Plan], error) {
			plan := Current(ctx.Session)
			if failed, ok := checkActive(plan); !ok {
				return failed, nil
			}
			var title string
			if p.Title != nil {
				var msg string
				if title, msg = checkText("Title", *p.Title); msg != "" {
					return tools.Fail[*Plan](msg), nil
				}
			}
			if p.Title == nil && p.Status == "" {
				return tools.Fail[*Plan]("Provide a new title or status to update a step."), nil
			}
			if plan.step(p.StepID) < 0 {
				return tools.Failf[*Plan]("Step %d does not exist.", p.StepID), nil
			}
			if err := ctx.Dispatch(StepUpdated{ID: p.StepID, Title: title, Status: p.Status}); err != nil {
				return tools.Result[*Plan]{}, err
			}
			return tools.OK(fmt.Sprintf("Step %d updated.", p.StepID), Current(ctx.Session)), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Start work on step 1.",
			Input:       `{"step_id":1,"status":"in_progress"}`,
			Output:      "Step 1 updated.\n\nObjective: Ship it\nStatus: active\n\n1 [in_progress] draft\n2 [pending] review\n3 [pending] publish",
		}),
	)
}
