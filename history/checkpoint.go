package history

import (
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// CheckpointParams are the arguments of session_checkpoint.
type CheckpointParams struct {
	Name string `json:"name" jsonschema:"The checkpoint's name, 1 to 64 characters; a checkpoint of the same name is replaced." schema:"minLength=1,maxLength=64"`
}

func checkpoint() *tools.Tool {
	return tools.New("session_checkpoint",
		"Name the session's current point (its plan, state and files), to come back to it later with session_restore.",
		tools.Annotations{Title: "Save a checkpoint", Idempotent: true},
		func(ctx *tools.Context, p CheckpointParams) (tools.Result[struct{}], error) {
			h := session.HistoryFrom(ctx)
			if h == nil {
				return tools.Fail[struct{}](off), nil
			}
			h.Checkpoint(p.Name)
			return tools.OK("Saved checkpoint '"+p.Name+"'. Call session_restore with this name to come back to this point.", struct{}{}), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Name the point before a risky refactoring.",
			Input:       `{"name":"before-refactor"}`,
			Output:      "Saved checkpoint 'before-refactor'. Call session_restore with this name to come back to this point.",
		}),
	)
}
