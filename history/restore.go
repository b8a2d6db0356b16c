package history

import (
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// RestoreParams are the arguments of session_restore.
type RestoreParams struct {
	Name string `json:"name" jsonschema:"The name of a checkpoint saved with session_checkpoint." schema:"minLength=1,maxLength=64"`
}

func restore() *tools.Tool {
	return tools.New("session_restore",
		"Go back to a checkpoint: the session's plan and state become what they were then, and the files changed since are put back.",
		tools.Annotations{Title: "Restore a checkpoint", Destructive: true, Idempotent: true},
		func(ctx *tools.Context, p RestoreParams) (tools.Result[restoreResult], error) {
			h := session.HistoryFrom(ctx)
			if h == nil {
				return tools.Fail[restoreResult](off), nil
			}
			d, err := h.Log(ctx)
			if err != nil {
				return tools.Result[restoreResult]{}, err
			}
			i := slices.IndexFunc(d.Checkpoints, func(c session.Checkpoint) bool { return c.Name == p.Name })
			if i < 0 {
				names := make([]string, len(d.Checkpoints))
				for j, c := range d.Checkpoints {
					names[j] = "'" + c.Name + "'"
				}
				msg := "No checkpoint '" + p.Name + "'."
				if len(names) > 0 {
					msg += " Checkpoints: " + strings.Join(names, ", ") + "."
				}
				return tools.Fail[restoreResult](msg), nil
			}
			cp := d.Checkpoints[i]
			return goBack(ctx, h, d, cp.Seq, cp.Root, "Restored checkpoint '"+p.Name+"'.")
		},
		tools.WithExamples(tools.Example{
			Description: "Go back to the point saved before a refactoring.",
			Input:       `{"name":"before-refactor"}`,
			Output:      "Restored checkpoint 'before-refactor'.\n\nundone: edit_file (call 1a2b3c4d9)\nfile put back: src/main.go",
		}),
	)
}
