package planning

import (
	"context"
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// ReminderHook is the name under which the server registers
// RemindPending as a hook (off until the configuration turns it on).
const ReminderHook = "plan_reminder"

// RemindPending is a stage for the output slot: once a call is over, when
// the session's plan has steps not done, it adds a text block to the
// result that says how many, such as
//
//	The plan has 2 pending steps and 1 in progress.
func RemindPending(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Outcome {
		out := next(ctx, call)
		if msg := Current(call.Session).pending(); msg != "" {
			out.AddFeedback(msg)
		}
		return out
	}
}

// pending says how many steps of p are not done, or "" when none is (or
// there is no plan).
func (p *Plan) pending() string {
	if p == nil {
		return ""
	}
	var pending, started int
	for _, s := range p.Steps {
		switch s.Status {
		case Pending:
			pending++
		case InProgress:
			started++
		}
	}
	switch {
	case pending > 0 && started > 0:
		return fmt.Sprintf("The plan has %s and %d in progress.", plural(pending, "pending step", "pending steps"), started)
	case pending > 0:
		return fmt.Sprintf("The plan has %s.", plural(pending, "pending step", "pending steps"))
	case started > 0:
		return fmt.Sprintf("The plan has %s in progress.", plural(started, "step", "steps"))
	}
	return ""
}
