package tools_test

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// GreetParams are the arguments of the greet tool. The JSON name of each
// field is the argument's name; its jsonschema tag is the description.
type GreetParams struct {
	Name string `json:"name" jsonschema:"Who to greet."`
	Loud bool   `json:"loud,omitempty" jsonschema:"Shout the greeting."`
}

// Greeting is the greet tool's result: sent to the client as structured
// content, and rendered for the model by its Render method.
type Greeting struct {
	Text string `json:"text" jsonschema:"The greeting."`
}

// Render returns the text the model reads after the result's message.
func (g Greeting) Render() string { return g.Text }

func ExampleNew() {
	greet := tools.New("greet", "Greet someone by name.",
		tools.Annotations{Title: "Greet", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p GreetParams) (tools.Result[Greeting], error) {
			if strings.TrimSpace(p.Name) == "" {
				return tools.Fail[Greeting]("Name must not be empty."), nil
			}
			greeting := "Hello, " + p.Name + "."
			if p.Loud {
				greeting = strings.ToUpper(greeting)
			}
			return tools.OK("Greeted "+p.Name+".", Greeting{Text: greeting}), nil
		})

	fmt.Printf("%s: %s\n", greet.Name(), greet.Description())
	fmt.Printf("input schema: %s\n", greet.InputSchema())
	fmt.Printf("output schema: %s\n", greet.OutputSchema())

	params, err := greet.Parse([]byte(`{"name": "Ada"}`))
	fmt.Printf("%#v %v\n", params, err)
	_, err = greet.Parse([]byte(`{"name": 3, "shout": true}`))
	fmt.Println(err)
	// Output:
	// greet: Greet someone by name.
	// input schema: {"type":"object","properties":{"name":{"type":"string","description":"Who to greet."},"loud":{"type":"boolean","description":"Shout the greeting."}},"required":["name"],"additionalProperties":false}
	// output schema: {"type":"object","properties":{"text":{"type":"string","description":"The greeting."}},"required":["text"],"additionalProperties":false}
	// tools_test.GreetParams{Name:"Ada", Loud:false} <nil>
	// /name: expected string, got number; /shout: unknown field
}
