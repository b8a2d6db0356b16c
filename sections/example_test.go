package sections_test

import (
	"fmt"
	"log"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
)

// GreetParams are the arguments of the greet tool.
type GreetParams struct {
	Name string `json:"name" jsonschema:"Who to greet."`
}

func ExampleNewTree() {
	greet := tools.New("greet", "Greet someone by name.",
		tools.Annotations{Title: "Greet", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p GreetParams) (tools.Result[any], error) {
			return tools.OK[any]("Hello, "+p.Name+".", nil), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Greet Ada.",
			Input:       `{"name": "Ada"}`,
			Output:      "Hello, Ada.",
		}))
	hello := &sections.Section{
		Key:      "hello",
		Title:    "Hello",
		Guidance: "Greet the people of {{.Place}} with `greet`.",
		Data:     struct{ Place string }{Place: "Lovelace Hall"},
		Tools:    []*tools.Tool{greet},
		Children: []*sections.Section{{
			Key:      "manners",
			Title:    "Manners",
			Guidance: "Greet each person once.",
		}},
	}
	tree, err := sections.NewTree(hello)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tree.Tools() {
		fmt.Println("tool:", t.Name())
	}
	fmt.Println(tree.Guidance())

	// NewTree refuses a tree that offers two tools of one name.
	again := &sections.Section{Key: "again", Title: "Again", Tools: []*tools.Tool{greet}}
	_, err = sections.NewTree(hello, again)
	fmt.Println(err)
	// Output:
	// tool: greet
	// ## 1. Hello
	//
	// Greet the people of Lovelace Hall with `greet`.
	//
	// Examples:
	//
	// - `greet`: Greet Ada.
	//   Input: `{"name": "Ada"}`
	//   Output:
	//     Hello, Ada.
	//
	// ### 1.1. Manners
	//
	// Greet each person once.
	// tool "greet" is declared by both section "hello" and section "again"
}
