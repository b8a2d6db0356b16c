package hooks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/tools"
)

// ValidateOutput returns the output validation stage: a successful result
// whose value is sent as structured content must match the tool's output
// schema, in its JSON form. The check runs as a commit hook, inside the
// call's transaction, so a mismatch (a bug in the tool, logged as an error)
// fails the call and restores its state:
//
//	Tool 'x' failed: its result does not match its output schema: /count: expected integer, got string
//
// Nil when no tool's output validation is on.
func (h *Hooks) ValidateOutput() tools.Middleware {
	if !h.validate {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if p := h.plan(call.Tool); p.validator != nil {
				call.OnCommit(func(out *tools.Outcome) error { return checkOutput(call, p.validator, out) })
			}
			return next(ctx, call)
		}
	}
}

// checkOutput checks the value the client would get as structured content.
func checkOutput(call *tools.Call, v *schema.Validator, out *tools.Outcome) error {
	if !out.Success || !out.HasValue() {
		return nil
	}
	raw, err := json.Marshal(out.Value)
	if err == nil {
		err = v.ValidateJSON(raw)
	}
	if err == nil {
		return nil
	}
	call.Logger.Error("the tool's result does not match its output schema (a bug in the tool)", "err", err)
	return tools.WithClass(tools.ClassOutput, fmt.Errorf("its result does not match its output schema: %w", err))
}
