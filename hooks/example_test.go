package hooks_test

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/hooks"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

type noteParams struct {
	Text string `json:"text,omitempty" jsonschema:"The note."`
}

func note(name string, ann tools.Annotations) *tools.Tool {
	return tools.New(name, "A note tool.", ann, func(*tools.Context, noteParams) (tools.Result[string], error) {
		return tools.OK("Done.", ""), nil
	})
}

// A hook of the program's own: after each call of a destructive tool, it
// tells the model how many of the session's last calls failed, read from
// the session's log. The server runs it in the output slot, before the
// built-in output stages (priority 1), for the tools its filter matches.
func ExampleHook() {
	write, read := note("write_note", tools.Annotations{Destructive: true}), note("read_note", tools.Annotations{ReadOnly: true})
	failures := hooks.Hook{
		Name:     "failures",
		Slot:     tools.SlotOutput,
		Priority: 1,
		Filter:   hooks.Filter{Annotations: []hooks.Annotation{hooks.Destructive}},
		Stage: func(next tools.Handler) tools.Handler {
			return func(ctx context.Context, call *tools.Call) *tools.Outcome {
				out := next(ctx, call)
				recent, err := call.History(ctx, 10)
				if err != nil {
					return out
				}
				failed := 0
				for _, c := range recent {
					if !c.Success {
						failed++
					}
				}
				if failed > 0 {
					out.AddFeedback(fmt.Sprintf("%d of the last %d calls failed.", failed, len(recent)))
				}
				return out
			}
		},
	}
	h, err := hooks.New(hooks.Config{Hooks: []hooks.Hook{failures}}, []*tools.Tool{write, read})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// The server composes h.Stages() with its own (server.Options.Stages);
	// here the output slot runs around a handler that always succeeds.
	run := tools.Chain(h.Stages()[tools.SlotOutput]...)(func(context.Context, *tools.Call) *tools.Outcome {
		return &tools.Outcome{Message: "Done.", Success: true}
	})
	history := func(context.Context, int) ([]session.CallSummary, error) {
		return []session.CallSummary{{Tool: "write_note", ErrorClass: "error"}, {Tool: "read_note", Success: true}}, nil
	}
	for _, t := range []*tools.Tool{write, read} {
		out := run(context.Background(), &tools.Call{Tool: t, ReadLog: history})
		fmt.Print(t.Name(), ": ", out.Text())
		for _, c := range out.Content {
			fmt.Print(" | ", c.(mcp.TextContent).Text)
		}
		fmt.Println()
	}
	// Output:
	// write_note: Done. | 1 of the last 2 calls failed.
	// read_note: Done.
}

func ExampleFilter() {
	f := hooks.Filter{Tools: []string{"*_note"}, Annotations: []hooks.Annotation{hooks.ReadOnly}}
	for _, t := range []*tools.Tool{
		note("read_note", tools.Annotations{ReadOnly: true}),
		note("write_note", tools.Annotations{}),
		note("read_file", tools.Annotations{ReadOnly: true}),
	} {
		fmt.Println(t.Name(), f.Matches(t))
	}
	// Output:
	// read_note true
	// write_note false
	// read_file false
}
