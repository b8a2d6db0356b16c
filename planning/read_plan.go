package planning

import "github.com/wink-mcp/wink-mcp/tools"

// ReadPlanParams are the arguments of planning_read_plan: none.
type ReadPlanParams struct{}

func readPlan() *tools.Tool {
	return tools.New("planning_read_plan",
		"Return the latest plan snapshot.",
		tools.Annotations{Title: "Read plan", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, _ ReadPlanParams) (tools.Result[*Plan], error) {
			plan := Current(ctx.Session)
			if plan == nil {
				return noPlan(), nil
			}
			msg := "Retrieved the current plan (no steps recorded)."
			if n := len(plan.Steps); n > 0 {
				msg = "Retrieved the current plan with " + plural(n, "step", "steps") + "."
			}
			return tools.OK(msg, plan), nil
		},
	)
}
