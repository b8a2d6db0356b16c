package planning

import "github.com/wink-mcp/wink-mcp/tools"

// AddStepParams are the arguments of planning_add_step.
type AddStepParams struct {
	Steps []string `json:"steps" jsonschema:"Titles of the steps to append, in order; each 1 to 500 characters."`
}

func addStep() *tools.Tool {
	return tools.New("planning_add_step",
		"Append one or more steps to the active plan.",
		tools.Annotations{Title: "Add plan steps"},
		func(ctx *tools.Context, p AddStepParams) (tools.Result[*Plan], error) {
			if msg := checkActive(Current(ctx.Session)); msg != "" {
				return tools.Fail[*Plan](msg), nil
			}
			if len(p.Steps) == 0 {
				return tools.Fail[*Plan]("Provide at least one step to add."), nil
			}
			steps, msg := checkTitles(p.Steps)
			if msg != "" {
				return tools.Fail[*Plan](msg), nil
			}
			if err := ctx.Dispatch(StepsAdded{Steps: steps}); err != nil {
				return tools.Result[*Plan]{}, err
			}
			return tools.OK("Added "+plural(len(steps), "step", "steps")+".", Current(ctx.Session)), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Append a step to the plan above.",
			Input:       `{"steps":["publish"]}`,
			Output:      "Added 1 step.\n\nObjective: Ship it\nStatus: active\n\n1 [pending] draft\n2 [pending] review\n3 [pending] publish",
		}),
	)
}

// checkActive returns the error text for a plan that cannot change, or "".
func checkActive(p *Plan) string {
	switch {
	case p == nil:
		return "No plan is currently initialised."
	case p.Status != Active:
		return "Plan must be active. Current status: " + string(p.Status) + "."
	}
	return ""
}
