package hooks

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/tools"
)

// CapOutput returns the output cap stage: on the way out, text longer than
// the tool's MaxTextBytes is cut (at a character boundary) and ends with a
// visible marker,
//
//	[Output truncated: showing the first 102400 of 523112 bytes.]
//
// A value that would have been sent whole as structured content is then
// kept out of the context instead (the client gets a resource link to it),
// so that the cap holds. Nil when no tool has a cap.
func (h *Hooks) CapOutput() tools.Middleware {
	if !h.capText {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			out := next(ctx, call)
			limit := h.plan(call.Tool).maxText
			if limit <= 0 {
				return out
			}
			text := out.Text()
			if len(text) <= limit {
				return out
			}
			cut := limit
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			marker := fmt.Sprintf("\n\n[Output truncated: showing the first %d of %d bytes.]", cut, len(text))
			if out.Success && !out.Exclude && call.Tool.OutputSchema() != nil && out.HasValue() {
				out.Exclude = true
				marker = fmt.Sprintf("\n\n[Output truncated: showing the first %d of %d bytes; the whole value is linked below.]", cut, len(text))
			}
			out.SetText(text[:cut] + marker)
			return out
		}
	}
}
