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
			if failed, ok := checkActive(Current(ctx.Session)); !ok {
				return failed, nil
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

// checkActive reports whether p can change, and if not the failed result
// that says why.
func checkActive(p *Plan) (tools.Result[*Plan], bool) {
	switch {
	case p == nil:
		return noPlan(), false
	case p.Status != Active:
		return tools.Fail[*Plan]("Plan must be active. Current status: " + string(p.Status) + "."), false
	}
	return tools.Result[*Plan]{}, true
}

// noPlan is the result of a call that needs a plan in a session that has
// none: what the session lacks, for a session started for the call.
func noPlan() tools.Result[*Plan] {
	return tools.Missing[*Plan]("plan", "No plan is currently initialised.")
}
