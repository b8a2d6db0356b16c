package schema_test

import (
	"errors"
	"testing"

	"github.com/wink-mcp/wink-mcp/schema"
)

// editSchema is edit_file's input schema as package tools infers it, with
// an object nested in an array to name paths below the root.
const editSchema = `{
	"type": "object",
	"properties": {
		"file_path":   {"type": "string"},
		"old_string":  {"type": "string"},
		"new_string":  {"type": "string"},
		"replace_all": {"type": "boolean"},
		"edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}},
		"open": {"type": "object", "unevaluatedProperties": false}
	},
	"required": ["file_path"],
	"additionalProperties": false,
	"$defs": {"edit": {
		"type": "object",
		"properties": {"op": {"type": "string"}, "path": {"type": "string"}, "old_string": {"type": "string"}},
		"additionalProperties": false
	}}
}`

func TestExplain(t *testing.T) {
	edit := mustCompile(t, editSchema)
	empty := mustCompile(t, `{"type": "object", "properties": {}, "additionalProperties": false}`)
	bare := mustCompile(t, `{"type": "object", "additionalProperties": false}`)
	tests := []struct {
		name  string
		v     *schema.Validator
		input string
		extra []string
		want  string
	}{
		{"camel case", edit, `{"file_path": "a", "replaceAll": true}`, nil,
			"Unknown argument 'replaceAll'; did you mean 'replace_all'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"hyphens and case", edit, `{"File-Path": "a"}`, nil,
			"Unknown argument 'File-Path'; did you mean 'file_path'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"a missing field no unknown one stands for", edit, `{"replaceAll": true}`, nil,
			"Invalid arguments: /file_path: required field is missing. Unknown argument 'replaceAll'; did you mean 'replace_all'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"a typo", edit, `{"file_path": "a", "old_strng": "x"}`, nil,
			"Unknown argument 'old_strng'; did you mean 'old_string'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"nothing close", edit, `{"file_path": "a", "verbose": true}`, nil,
			"Unknown argument 'verbose'. edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"a short name is not guessed", edit, `{"file_path": "a", "op": 1}`, nil,
			"Unknown argument 'op'. edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"extra fields of the root", edit, `{"file_path": "a", "session_id": "s"}`, []string{"session"},
			"Unknown argument 'session_id'; did you mean 'session'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open, session."},
		{"two unknown fields, one list", edit, `{"file_path": "a", "replaceAll": true, "x": 1}`, nil,
			"Unknown argument 'replaceAll'; did you mean 'replace_all'? Unknown argument 'x'. edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"with other problems", edit, `{"file_path": 1, "newString": "b"}`, nil,
			"Invalid arguments: /file_path: expected string, got number. Unknown argument 'newString'; did you mean 'new_string'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open."},
		{"nested, through a $ref", edit, `{"file_path": "a", "edits": [{"op": "x", "oldString": "y"}]}`, nil,
			"Unknown argument 'oldString' in edits/0; did you mean 'old_string'? edits/0 takes: op, path, old_string."},
		{"nested and at the root", edit, `{"file_path": "a", "edits": [{"pth": "p"}], "filePath": "b"}`, []string{"session"},
			"Unknown argument 'pth' in edits/0; did you mean 'path'? edits/0 takes: op, path, old_string. Unknown argument 'filePath'; did you mean 'file_path'? edit_file takes: file_path, old_string, new_string, replace_all, edits, open, session."},
		{"unevaluatedProperties lists nothing", edit, `{"file_path": "a", "open": {"k": 1}}`, nil,
			"Unknown argument 'k' in open."},
		{"a tool without arguments", empty, `{"verbose": true}`, nil,
			"Unknown argument 'verbose'. t takes no arguments."},
		{"no properties keyword", bare, `{"verbose": true}`, nil,
			"Unknown argument 'verbose'. t takes no arguments."},
		{"no arguments but the extra", empty, `{"sesion": "s"}`, []string{"session"},
			"Unknown argument 'sesion'; did you mean 'session'? t takes: session."},
		{"a name with a quote", empty, `{"it's": 1}`, nil,
			`Unknown argument "it's". t takes no arguments.`},
		{"other problems alone are unchanged", edit, `{"file_path": 1, "replace_all": "yes"}`, nil,
			"Invalid arguments: /file_path: expected string, got number; /replace_all: expected boolean, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := "t"
			if tt.v == edit {
				root = "edit_file"
			}
			var se *schema.Error
			if err := tt.v.ValidateJSON([]byte(tt.input)); !errors.As(err, &se) {
				t.Fatalf("ValidateJSON(%s) = %v, want a *schema.Error", tt.input, err)
			}
			if got := se.Explain(root, tt.extra...); got != tt.want {
				t.Errorf("Explain\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	known := []string{"file_path", "old_string", "new_string", "replace_all", "session", "step_id", "title", "status"}
	tests := []struct{ name, want string }{
		{"replaceAll", "replace_all"},
		{"REPLACE-ALL", "replace_all"},
		{"filePath", "file_path"},
		{"old_strng", "old_string"},
		{"oldStr", ""},
		{"sessionId", "session"},
		{"stepId", "step_id"},
		{"step", ""},
		{"titel", "title"},
		{"stat", ""},
		{"statuses", "status"},
		{"x", ""},
		{"", ""},
		{"content", ""},
	}
	for _, tt := range tests {
		if got := schema.Closest(tt.name, known); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := schema.Closest("replaceAll", nil); got != "" {
		t.Errorf("Closest among none = %q", got)
	}
}
