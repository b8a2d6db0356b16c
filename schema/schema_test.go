package schema_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/schema"
)

// testSchema is the schema most cases validate against. It mirrors what
// package tools infers from a params struct: a closed object with required
// fields, an enum, arrays and nested objects, and property names that need
// escaping in a JSON pointer or quoting in the library's messages.
const testSchema = `{
	"type": "object",
	"properties": {
		"step_id": {"type": "integer"},
		"title":   {"type": "string", "minLength": 1, "maxLength": 5},
		"status":  {"type": "string", "enum": ["pending", "done"]},
		"count":   {"type": "integer", "minimum": 0},
		"tags":    {"type": "array", "items": {"type": "string"}, "maxItems": 2},
		"steps": {
			"type": "array",
			"items": {
				"type": "object",
				"properties": {"id": {"type": "integer"}},
				"required": ["id"],
				"additionalProperties": false
			}
		},
		"a/b":     {"type": "integer"},
		"a~b":     {"type": "integer"},
		"it's":    {"type": "integer"},
		"say \"hi\"": {"type": "integer"},
		"café":    {"type": "integer"},
		"100%":    {"type": "integer"},
		"my obj":  {"type": "object", "properties": {"x y": {"type": "integer"}}, "additionalProperties": false}
	},
	"required": ["step_id"],
	"additionalProperties": false
}`

func mustCompile(t testing.TB, doc string) *schema.Validator {
	t.Helper()
	v, err := schema.Compile(json.RawMessage(doc))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return v
}

// outOfRangeMsg is the problem of a number too long, or with too large an
// exponent, to be checked.
const outOfRangeMsg = "number out of range: at most 128 characters, with an exponent from -400 to 400"

func TestValidateJSON(t *testing.T) {
	v := mustCompile(t, testSchema)
	tests := []struct {
		name  string
		input string
		want  string // exact error text; "" means valid
	}{
		{"valid minimal", `{"step_id": 1}`, ""},
		{"valid full", `{"step_id": 1, "title": "x", "status": "done", "count": 0, "tags": ["a"], "steps": [{"id": 2}], "a/b": 1, "a~b": 2}`, ""},
		{"integer written with exponent is still an integer", `{"step_id": 1e2}`, ""},
		{"empty input is an empty object", ``, "/step_id: required field is missing"},
		{"blank input is an empty object", " \n\t", "/step_id: required field is missing"},
		{"type mismatch", `{"step_id": "x"}`, "/step_id: expected integer, got string"},
		{"no coercion of a numeric string", `{"step_id": "1"}`, "/step_id: expected integer, got string"},
		{"no coercion of a fraction", `{"step_id": 1.5}`, "/step_id: expected integer, got number"},
		{"no coercion of a boolean", `{"step_id": true}`, "/step_id: expected integer, got boolean"},
		{"null is not an integer", `{"step_id": null}`, "/step_id: expected integer, got null"},
		{"unknown field", `{"step_id": 1, "extra": 2}`, "/extra: unknown field"},
		{"missing required", `{}`, "/step_id: required field is missing"},
		{"enum", `{"step_id": 1, "status": "later"}`, `/status: expected one of "pending", "done"`},
		{"minLength", `{"step_id": 1, "title": ""}`, "/title: expected at least 1 characters"},
		{"maxLength", `{"step_id": 1, "title": "toolong"}`, "/title: expected at most 5 characters"},
		{"minimum", `{"step_id": 1, "count": -1}`, "/count: must be >= 0, got -1"},
		{"maxItems", `{"step_id": 1, "tags": ["a", "b", "c"]}`, "/tags: expected at most 2 items"},
		{"array item type", `{"step_id": 1, "tags": ["a", 2]}`, "/tags/1: expected string, got number"},
		{"nested array item field", `{"step_id": 1, "steps": [{"id": 1}, {"id": "2"}]}`, "/steps/1/id: expected integer, got string"},
		{"nested missing field", `{"step_id": 1, "steps": [{}]}`, "/steps/0/id: required field is missing"},
		{"nested unknown field", `{"step_id": 1, "steps": [{"id": 1, "x": 1}]}`, "/steps/0/x: unknown field"},
		{
			"several problems sorted by pointer",
			`{"title": 3, "zeta": 1, "extra": true, "status": "x"}`,
			`/extra: unknown field; /status: expected one of "pending", "done"; /step_id: required field is missing; /title: expected string, got number; /zeta: unknown field`,
		},
		{"spec example", `{"step_id": "1", "extra": 1}`, "/extra: unknown field; /step_id: expected integer, got string"},
		{"root not an object", `[1, 2]`, "(root): expected object, got array"},
		{"root is a string", `"x"`, "(root): expected object, got string"},
		{"root is null", `null`, "(root): expected object, got null"},
		{"invalid JSON", `{"step_id": }`, "(root): invalid JSON: invalid character '}' looking for beginning of value"},
		{"truncated JSON", `{"step_id": 1`, "(root): invalid JSON: unexpected EOF"},
		{"trailing data", `{"step_id": 1} {}`, "(root): invalid JSON: unexpected data after the value"},
		{"trailing garbage", `{"step_id": 1}x`, "(root): invalid JSON: unexpected data after the value"},
		{"number math/big cannot hold", `{"step_id": 1e1000010}`, "/step_id: " + outOfRangeMsg},
		{"nested number math/big cannot hold", `{"step_id": 1, "tags": [1e1000010]}`, "/tags/0: " + outOfRangeMsg},
		{"exponent at the bound", `{"step_id": 1e400}`, ""},
		{"negative exponent at the bound reaches the schema", `{"step_id": 1E-400}`, "/step_id: expected integer, got number"},
		{"exponent at the bound, with a sign and zeros", `{"step_id": 1e+000400}`, ""},
		{"exponent over the bound", `{"step_id": 1e401}`, "/step_id: " + outOfRangeMsg},
		{"negative exponent over the bound", `{"step_id": -1.5E-401}`, "/step_id: " + outOfRangeMsg},
		{"zero with an exponent over the bound", `{"step_id": 0e999999999999999999999}`, "/step_id: " + outOfRangeMsg},
		{"every number out of range is named", `{"step_id": 1, "tags": [1e999999, "x", 2e999999]}`, "/tags/0: " + outOfRangeMsg + "; /tags/2: " + outOfRangeMsg},
		{"number of the longest length", `{"step_id": 1` + strings.Repeat("0", 127) + `}`, ""},
		{"number over the longest length", `{"step_id": 1` + strings.Repeat("0", 128) + `}`, "/step_id: " + outOfRangeMsg},
		{"slash in a field name is escaped", `{"step_id": 1, "a/b": "x"}`, "/a~1b: expected integer, got string"},
		{"tilde in a field name is escaped", `{"step_id": 1, "a~b": "x"}`, "/a~0b: expected integer, got string"},
		{"unknown field with a slash", `{"step_id": 1, "x/y": 1}`, "/x~1y: unknown field"},
		{"unknown field with a tilde", `{"step_id": 1, "x~y": 1}`, "/x~0y: unknown field"},
		{"unknown field with a tilde and a slash", `{"step_id": 1, "~/": 1}`, "/~0~1: unknown field"},
		{"unknown field with a single quote", `{"step_id": 1, "don't": 1}`, "/don't: unknown field"},
		{"unknown field with double quotes", `{"step_id": 1, "say \"no\"": 1}`, `/say "no": unknown field`},
		{"unknown field with a backslash", `{"step_id": 1, "a\\b": 1}`, `/a\b: unknown field`},
		{"unknown field with a backslash before a quote", `{"step_id": 1, "a\\'": 1}`, `/a\': unknown field`},
		{"unknown field with a comma and a space", `{"step_id": 1, "x', 'y": 1}`, `/x', 'y: unknown field`},
		{"unknown field with a newline", `{"step_id": 1, "a\nb": 1}`, "/a\nb: unknown field"},
		{"unknown field with unicode", `{"step_id": 1, "é": 1}`, "/é: unknown field"},
		{"known field with a single quote", `{"step_id": 1, "it's": "x"}`, "/it's: expected integer, got string"},
		{"known field with double quotes", `{"step_id": 1, "say \"hi\"": "x"}`, `/say "hi": expected integer, got string`},
		{"known field with unicode", `{"step_id": 1, "café": "x"}`, "/café: expected integer, got string"},
		{"known field with a percent sign", `{"step_id": 1, "100%": "x"}`, "/100%: expected integer, got string"},
		{"nested field names with spaces", `{"step_id": 1, "my obj": {"x y": "1", "p q": 1}}`, "/my obj/p q: unknown field; /my obj/x y: expected integer, got string"},
		{"empty field name", `{"step_id": 1, "": 1}`, "/: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.ValidateJSON([]byte(tt.input))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidateJSON(%s) = %v, want nil", tt.input, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateJSON(%s) = nil, want %q", tt.input, tt.want)
			}
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("ValidateJSON(%s) error is %T, want *schema.Error", tt.input, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("ValidateJSON(%s)\n got: %s\nwant: %s", tt.input, got, tt.want)
			}
		})
	}
}

// TestUnevaluatedPropertiesNamed pins a bug: a field refused by
// unevaluatedProperties (in a schema given with tools.WithInputSchema)
// failed validation with no problem at all, and an empty message, because
// the library names such a field by its location, not in its message.
func TestUnevaluatedPropertiesNamed(t *testing.T) {
	v := mustCompile(t, `{
		"type": "object",
		"properties": {"a": {"type": "integer"}},
		"allOf": [{"properties": {"b": {"type": "integer"}}}],
		"unevaluatedProperties": false
	}`)
	err := v.ValidateJSON([]byte(`{"a": 1, "b": 2, "c": 3, "d": 4}`))
	if err == nil || err.Error() != "/c: unknown field; /d: unknown field" {
		t.Errorf("got %v, want /c: unknown field; /d: unknown field", err)
	}
}

func TestProblemsAreStructured(t *testing.T) {
	v := mustCompile(t, testSchema)
	err := v.ValidateJSON([]byte(`{"step_id": "1", "a/b": 1.5, "extra": 1}`))
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *schema.Error", err)
	}
	want := []schema.Problem{
		{Pointer: "/a~1b", Message: "expected integer, got number"},
		{Pointer: "/extra", Message: "unknown field", Known: []string{
			"step_id", "title", "status", "count", "tags", "steps", "a/b", "a~b", "it's", `say "hi"`, "café", "100%", "my obj",
		}},
		{Pointer: "/step_id", Message: "expected integer, got string"},
	}
	if !reflect.DeepEqual(se.Problems, want) {
		t.Errorf("Problems =\n%+v\nwant\n%+v", se.Problems, want)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    schema.Problem
		want string
	}{
		{schema.Problem{Pointer: "", Message: "m"}, "(root): m"},
		{schema.Problem{Pointer: "/a", Message: "m"}, "/a: m"},
		{schema.Problem{Pointer: "/a/0/b", Message: "unknown field"}, "/a/0/b: unknown field"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestValidateDecoded(t *testing.T) {
	v := mustCompile(t, testSchema)
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"json.Number integer", map[string]any{"step_id": json.Number("3")}, ""},
		{"float64 integer", map[string]any{"step_id": float64(3)}, ""},
		{"float64 fraction", map[string]any{"step_id": 3.5}, "/step_id: expected integer, got number"},
		{"string", map[string]any{"step_id": "3"}, "/step_id: expected integer, got string"},
		{"nil root", nil, "(root): expected object, got null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.value)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate(%v) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

func TestDecodeKeepsNumbersExact(t *testing.T) {
	val, err := schema.Decode([]byte(`{"n": 12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := val.(map[string]any)["n"].(json.Number)
	if !ok {
		t.Fatalf("n decoded as %T, want json.Number", val.(map[string]any)["n"])
	}
	if n.String() != "12345678901234567890" {
		t.Errorf("n = %s, want 12345678901234567890", n)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"not JSON", `{`},
		{"bad type keyword", `{"type": 3}`},
		{"remote ref is refused", `{"$ref": "https://example.com/schema.json"}`},
		{"bad pattern", `{"type": "string", "pattern": "("}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v, err := schema.Compile(json.RawMessage(tt.doc)); err == nil {
				t.Fatalf("Compile(%s) = %v, nil; want an error", tt.doc, v)
			}
		})
	}
}

func TestLocalRef(t *testing.T) {
	v := mustCompile(t, `{
		"$defs": {"id": {"type": "integer"}},
		"type": "object",
		"properties": {"id": {"$ref": "#/$defs/id"}},
		"additionalProperties": false
	}`)
	if err := v.ValidateJSON([]byte(`{"id": 1}`)); err != nil {
		t.Errorf("valid: %v", err)
	}
	err := v.ValidateJSON([]byte(`{"id": "1"}`))
	if err == nil || err.Error() != "/id: expected integer, got string" {
		t.Errorf("invalid: got %v, want /id: expected integer, got string", err)
	}
}

// fuzzSchema is the fixed schema FuzzValidate checks random instances
// against.
const fuzzSchema = `{
	"type": "object",
	"properties": {
		"n":    {"type": "integer", "minimum": 0},
		"s":    {"type": "string", "maxLength": 4},
		"e":    {"type": "string", "enum": ["a", "b"]},
		"list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "boolean"}}, "required": ["k"], "additionalProperties": false}},
		"open": {"type": "object"}
	},
	"required": ["n"],
	"additionalProperties": false
}`

func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"n": 1}`, `{"n": "1"}`, `{"n": 1.5}`, `{"n": -1}`,
		`{"n": 1, "s": "hello"}`, `{"n": 1, "e": "c"}`, `{"n": 1, "x": 1}`,
		`{"n": 1, "list": [{"k": true}, {}, {"k": 1, "z": 2}]}`,
		`{"n": 1, "open": {"a/b": 1, "a~b": [null]}}`, `{"a'b": 1, "c\"d": 2}`,
		`[1]`, `null`, `"x"`, `{"n": 1} {}`, `{"n":`, "\xff",
		`{"n": 1e400}`, `{"n": 0.0}`,
	} {
		f.Add([]byte(seed))
	}
	v := mustCompile(f, fuzzSchema)
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := v.ValidateJSON(raw)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v is %T, want *schema.Error", err, err)
			}
			if len(se.Problems) == 0 {
				t.Fatalf("error with no problems for %q", raw)
			}
			for _, p := range se.Problems {
				if p.Message == "" {
					t.Fatalf("problem with no message for %q: %+v", raw, se.Problems)
				}
			}
			return
		}
		// A valid instance stays valid after a round trip through
		// encoding/json, as the tool's decoder will see it.
		val, derr := schema.Decode(raw)
		if derr != nil {
			t.Fatalf("ValidateJSON accepted %q but Decode fails: %v", raw, derr)
		}
		again, merr := json.Marshal(val)
		if merr != nil {
			t.Fatalf("re-marshal %q: %v", raw, merr)
		}
		if err := v.ValidateJSON(again); err != nil {
			t.Fatalf("%q validates but its re-marshalled form %q does not: %v", raw, again, err)
		}
	})
}

// TestKnownFieldPointerIsNotURLEscaped pins a bug: the pointer of a problem
// in a declared field came from the library's instance location, which
// URL-escapes each segment ("/it%27s", "/my%20obj"), while unknown and
// missing fields were named by plain JSON pointers ("/it's"). Both must be
// plain JSON pointers, so one field is always named the same way.
func TestKnownFieldPointerIsNotURLEscaped(t *testing.T) {
	v := mustCompile(t, `{
		"type": "object",
		"properties": {"my obj": {"type": "object", "properties": {"it's": {"type": "integer"}}, "required": ["n%"], "additionalProperties": false}},
		"additionalProperties": false
	}`)
	err := v.ValidateJSON([]byte(`{"my obj": {"it's": "x", "é": 1}}`))
	const want = "/my obj/it's: expected integer, got string; /my obj/n%: required field is missing; /my obj/é: unknown field"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
