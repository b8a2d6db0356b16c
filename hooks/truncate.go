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
// Only the text block is cut. A result's structured content is left whole,
// so that it stays valid for the tool's output schema and a client that
// checks it (as the official SDKs do) accepts the result; the tools that
// can return much (read_file, grep, glob) page their results instead, so
// that a call stays under the cap. Nil when no tool has a cap.
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
				marker = fmt.Sprintf("\n\n[Output truncated: showing the first %d of %d bytes; the structured content holds the whole value.]", cut, len(text))
			}
			out.SetText(text[:cut] + marker)
			return out
		}
	}
}
