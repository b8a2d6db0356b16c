package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// SamplingParams are the arguments of test_sampling.
type SamplingParams struct {
	Prompt string `json:"prompt" jsonschema:"The prompt to send to the client's model."`
}

func sampling() *tools.Tool {
	return tools.New("test_sampling", "Ask the client's model to answer a prompt (sampling/createMessage).", readOnly("Sampling"),
		func(ctx *tools.Context, p SamplingParams) (tools.Result[noValue], error) {
			res, err := ctx.CreateMessage(mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(p.Prompt)}},
				MaxTokens: 100,
			}})
			if err != nil {
				return tools.Failf[noValue]("Sampling failed: %v", err), nil
			}
			text := fmt.Sprint(res.Content)
			if tc, ok := res.Content.(mcp.TextContent); ok {
				text = tc.Text
			}
			return ok("LLM response: " + text), nil
		})
}

// ElicitationParams are the arguments of test_elicitation.
type ElicitationParams struct {
	Message string `json:"message" jsonschema:"The message to show the user."`
}

func elicitation() *tools.Tool {
	return tools.New("test_elicitation", "Ask the user, through the client, for a username and email (elicitation/create).", readOnly("Elicitation"),
		func(ctx *tools.Context, p ElicitationParams) (tools.Result[noValue], error) {
			return elicit(ctx, p.Message, map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			}, "User response")
		})
}

func elicitationDefaults() *tools.Tool {
	return tools.New("test_elicitation_sep1034_defaults", "Elicit input with a default for every primitive type (SEP-1034).", readOnly("Elicitation defaults"),
		func(ctx *tools.Context, _ NoParams) (tools.Result[noValue], error) {
			return elicit(ctx, "Please review and update the form fields with defaults", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
				"required": []string{},
			}, "Elicitation completed")
		})
}

func elicitationEnums() *tools.Tool {
	titled := func(names ...string) []map[string]any {
		var out []map[string]any
		for i, n := range names {
			out = append(out, map[string]any{"const": fmt.Sprintf("value%d", i+1), "title": n})
		}
		return out
	}
	return tools.New("test_elicitation_sep1330_enums", "Elicit input with every enum schema variant (SEP-1330).", readOnly("Elicitation enums"),
		func(ctx *tools.Context, _ NoParams) (tools.Result[noValue], error) {
			return elicit(ctx, "Please select options from the enum fields", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "description": "Select one option", "enum": []string{"option1", "option2", "option3"}},
					"titledSingle":   map[string]any{"type": "string", "description": "Select one option with titles", "oneOf": titled("First Option", "Second Option", "Third Option")},
					"legacyEnum": map[string]any{"type": "string", "description": "Select one option (legacy)",
						"enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti": map[string]any{"type": "array", "description": "Select multiple options",
						"items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
					"titledMulti": map[string]any{"type": "array", "description": "Select multiple options with titles",
						"items": map[string]any{"anyOf": titled("First Choice", "Second Choice", "Third Choice")}},
				},
				"required": []string{},
			}, "Elicitation completed")
		})
}

// elicit asks the client for input matching schema and reports the answer.
func elicit(ctx *tools.Context, message string, schema map[string]any, label string) (tools.Result[noValue], error) {
	res, err := ctx.Elicit(mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: message, RequestedSchema: schema}})
	if err != nil {
		return tools.Failf[noValue]("Elicitation failed: %v", err), nil
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return tools.Result[noValue]{}, err
	}
	return ok(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, content)), nil
}
