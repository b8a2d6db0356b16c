package history

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// UndoParams are the arguments of session_undo.
type UndoParams struct {
	Steps int `json:"steps,omitempty" jsonschema:"How many of the last calls to undo, newest first; default 1." schema:"minimum=1,default=1"`
}

func undo() *tools.Tool {
	return tools.New("session_undo",
		"Undo the last calls that changed this session: its plan and state go back to what they were before them, and the files they changed are put back.",
		tools.Annotations{Title: "Undo calls", Destructive: true},
		func(ctx *tools.Context, p UndoParams) (tools.Result[restoreResult], error) {
			h := session.HistoryFrom(ctx)
			if h == nil {
				return tools.Fail[restoreResult](off), nil
			}
			steps := max(p.Steps, 1)
			d, err := h.Log(ctx)
			if err != nil {
				return tools.Result[restoreResult]{}, err
			}
			var last []session.HistoryCommit // the calls undo may undo, newest first
			for i := len(d.Commits) - 1; i >= 0 && len(last) < steps; i-- {
				if c := d.Commits[i]; !c.Restores && !c.Undone {
					last = append(last, c)
				}
			}
			if len(last) < steps {
				return tools.Failf[restoreResult]("Only %d calls can be undone (the history keeps the last %d changes). Nothing was changed.", len(last), h.Retention()), nil
			}
			x := last[steps-1]
			return goBack(ctx, h, d, x.Seq-1, x.Prev, fmt.Sprintf("Undid %s.", plural(steps, "call", "calls")))
		},
		tools.WithExamples(tools.Example{
			Description: "Undo the last two calls.",
			Input:       `{"steps":2}`,
			Output:      "Undid 2 calls.\n\nundone: edit_file (call 1a2b3c4d9)\nundone: write_file (call 1a2b3c4d8)\nfile put back: src/main.go",
		}),
	)
}

// plural is n and the noun that agrees with it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
