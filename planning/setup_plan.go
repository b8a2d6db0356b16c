package planning

import "github.com/wink-mcp/wink-mcp/tools"

// SetupPlanParams are the arguments of planning_setup_plan.
type SetupPlanParams struct {
	Objective    string   `json:"objective" jsonschema:"What the plan should achieve; 1 to 500 characters."`
	InitialSteps []string `json:"initial_steps,omitempty" jsonschema:"Titles of the first steps, in order; each 1 to 500 characters."`
}

func setupPlan() *tools.Tool {
	return tools.New("planning_setup_plan",
		"Create or replace the session plan with an objective and optional initial steps.",
		tools.Annotations{Title: "Set up plan", Destructive: true, Idempotent: true},
		func(ctx *tools.Context, p SetupPlanParams) (tools.Result[*Plan], error) {
			objective, msg := checkText("Objective", p.Objective)
			if msg != "" {
				return tools.Fail[*Plan](msg), nil
			}
			steps, msg := checkTitles(p.InitialSteps)
			if msg != "" {
				return tools.Fail[*Plan](msg), nil
			}
			if err := ctx.Dispatch(PlanSetup{Objective: objective, Steps: steps}); err != nil {
				return tools.Result[*Plan]{}, err
			}
			return tools.OK("Plan initialised with "+plural(len(steps), "step", "steps")+".", Current(ctx.Session)), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Start a plan with two steps.",
			Input:       `{"objective":"Ship it","initial_steps":["draft","review"]}`,
			Output:      "Plan initialised with 2 steps.\n\nObjective: Ship it\nStatus: active\n\n1 [pending] draft\n2 [pending] review",
		}),
	)
}
