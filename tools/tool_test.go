package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Color is a named string type with a fixed set of values.
type Color string

func (Color) Enum() []string { return []string{"red", "green", "blue"} }

type Inner struct {
	Name   string `json:"name" jsonschema:"The inner name."`
	Weight int    `json:"weight,omitempty" jsonschema:"Its weight."`
}

// fullParams exercises every rule of schema inference.
type fullParams struct {
	Title   string         `json:"title" jsonschema:"The title."`
	Count   int            `json:"count,omitempty" jsonschema:"How many." default:"3"`
	Mode    string         `json:"mode,omitempty" jsonschema:"The mode." default:"fast"`
	Color   Color          `json:"color" jsonschema:"A required color."`
	Shade   Color          `json:"shade,omitempty" jsonschema:"An optional color." default:"blue"`
	Limit   *int           `json:"limit,omitempty" jsonschema:"A pointer field, never null."`
	Tags    []string       `json:"tags,omitempty" jsonschema:"A list of strings."`
	Inner   Inner          `json:"inner" jsonschema:"A nested struct."`
	Items   []Inner        `json:"items,omitempty" jsonschema:"A list of nested structs."`
	Colors  []Color        `json:"colors,omitempty" jsonschema:"A list of colors."`
	Opt     *Inner         `json:"opt,omitempty" jsonschema:"A pointer to a struct."`
	Flag    bool           `json:"flag,omitzero" jsonschema:"A flag, optional through omitzero."`
	Ratio   float64        `json:"ratio,omitempty" jsonschema:"A number."`
	Weights map[string]int `json:"weights,omitempty" jsonschema:"A map."`
	//lint:ignore U1000 an unexported field must not become a property
	hidden  string
	Skipped string `json:"-"`
}

type fullResult struct {
	ID    int      `json:"id" jsonschema:"The new ID."`
	Tags  []string `json:"tags" jsonschema:"The tags."`
	Inner *Inner   `json:"inner,omitempty" jsonschema:"Details."`
}

type noParams struct{}

var ann = tools.Annotations{Title: "A tool"}

func handler[P, R any](r tools.Result[R]) tools.HandlerFunc[P, R] {
	return func(*tools.Context, P) (tools.Result[R], error) { return r, nil }
}

func newTool[P, R any](t testing.TB, opts ...tools.Option) *tools.Tool {
	t.Helper()
	tl := tools.New("a_tool", "Does a thing.", ann, handler[P](tools.Result[R]{}), opts...)
	if err := tl.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return tl
}

// golden compares got (a JSON document, indented for reading) with
// testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", name, err, got)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from %s (run with -update to accept):\n got:\n%s\nwant:\n%s", name, path, buf.Bytes(), want)
	}
}

func TestInferredSchemasGolden(t *testing.T) {
	tests := []struct {
		name string
		tool *tools.Tool
		out  bool // compare the output schema instead of the input schema
	}{
		{"full_params_input", newTool[fullParams, fullResult](t), false},
		{"full_result_output", newTool[fullParams, fullResult](t), true},
		{"pointer_result_output", newTool[noParams, *Inner](t), true},
		{"no_params_input", newTool[noParams, string](t), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.tool.InputSchema()
			if tt.out {
				s = tt.tool.OutputSchema()
			}
			golden(t, tt.name, s)
		})
	}
}

// schemaMap decodes a schema for the structural checks below.
func schemaMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("schema is not a JSON object: %v\n%s", err, raw)
	}
	return m
}

func TestInferredInputSchemaRules(t *testing.T) {
	s := schemaMap(t, newTool[fullParams, fullResult](t).InputSchema())
	props := s["properties"].(map[string]any)
	prop := func(name string) map[string]any {
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Fatalf("no property %q in %v", name, props)
		}
		return p
	}

	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("root: type %v additionalProperties %v; want object, false", s["type"], s["additionalProperties"])
	}
	if got, want := s["required"], []any{"title", "color", "inner"}; !reflect.DeepEqual(got, want) {
		t.Errorf("required = %v, want %v (omitempty and omitzero fields are optional)", got, want)
	}
	for _, name := range []string{"hidden", "Skipped", "-"} {
		if _, ok := props[name]; ok {
			t.Errorf("property %q should not exist", name)
		}
	}
	if len(props) != 14 {
		t.Errorf("%d properties, want 14", len(props))
	}

	// Every property, at any depth, is described.
	var walk func(at string, s map[string]any)
	walk = func(at string, s map[string]any) {
		ps, _ := s["properties"].(map[string]any)
		for name, p := range ps {
			pm := p.(map[string]any)
			if d, _ := pm["description"].(string); d == "" {
				t.Errorf("%s/%s has no description", at, name)
			}
			walk(at+"/"+name, pm)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(at+"/items", items)
		}
		if _, ok := s["properties"]; ok && s["additionalProperties"] != false {
			t.Errorf("%s: object without additionalProperties: false", at)
		}
	}
	walk("", s)

	tests := []struct {
		name, key string
		want      any
	}{
		{"color", "enum", []any{"red", "green", "blue"}},
		{"shade", "enum", []any{"red", "green", "blue"}},
		{"shade", "type", "string"},
		{"count", "default", 3.0},
		{"mode", "default", "fast"},
		{"shade", "default", "blue"},
		{"limit", "type", "integer"}, // not ["null","integer"]
		{"tags", "type", "array"},
		{"items", "type", "array"},
		{"opt", "type", "object"},
		{"inner", "type", "object"},
		{"inner", "required", []any{"name"}},
		{"flag", "type", "boolean"},
		{"ratio", "type", "number"},
	}
	for _, tt := range tests {
		if got := prop(tt.name)[tt.key]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("/%s %s = %#v, want %#v", tt.name, tt.key, got, tt.want)
		}
	}
	colors := prop("colors")["items"].(map[string]any)
	if !reflect.DeepEqual(colors["enum"], []any{"red", "green", "blue"}) {
		t.Errorf("/colors/items enum = %v", colors["enum"])
	}
	if _, ok := prop("count")["enum"]; ok {
		t.Error("/count has an enum")
	}
}

func TestNoParamsSchema(t *testing.T) {
	tl := newTool[noParams, string](t)
	const want = `{"type":"object","properties":{},"additionalProperties":false}`
	if got := string(tl.InputSchema()); got != want {
		t.Errorf("InputSchema = %s, want %s", got, want)
	}
	for _, args := range []string{``, `null`, `{}`, ` {} `} {
		if _, err := tl.Parse([]byte(args)); err != nil {
			t.Errorf("Parse(%q) = %v, want no error", args, err)
		}
	}
	for args, want := range map[string]string{
		`{"x": 1}`:         "/x: unknown field",
		`{"a": 1, "b": 2}`: "/a: unknown field; /b: unknown field",
		`{"": null}`:       "/: unknown field",
		`[]`:               "(root): expected object, got array",
	} {
		_, err := tl.Parse([]byte(args))
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%s) = %v, want %q", args, err, want)
		}
	}
}

func TestOutputSchema(t *testing.T) {
	tests := []struct {
		name string
		tool *tools.Tool
		want bool
	}{
		{"struct", newTool[noParams, fullResult](t), true},
		{"pointer to struct", newTool[noParams, *fullResult](t), true},
		{"pointer to pointer to struct", newTool[noParams, **fullResult](t), true},
		{"empty struct", newTool[noParams, struct{}](t), true},
		{"slice of structs", newTool[noParams, []fullResult](t), false},
		{"string", newTool[noParams, string](t), false},
		{"int", newTool[noParams, int](t), false},
		{"map", newTool[noParams, map[string]any](t), false},
		{"interface", newTool[noParams, any](t), false},
		{"named string", newTool[noParams, Color](t), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tool.OutputSchema()
			if (got != nil) != tt.want {
				t.Fatalf("OutputSchema = %s, want present: %v", got, tt.want)
			}
			if got != nil {
				s := schemaMap(t, got)
				if s["type"] != "object" {
					t.Errorf("output schema type = %v, want object", s["type"])
				}
				if _, ok := s["properties"]; !ok {
					t.Errorf("output schema %s has no properties", got)
				}
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	a := tools.Annotations{Title: "T", ReadOnly: true, Idempotent: true}
	ex := tools.Example{Description: "d", Input: `{}`, Output: "o"}
	tl := tools.New("my-tool_1", "  Describes.  ", a, handler[noParams](tools.Result[string]{}), tools.WithExamples(ex), tools.WithExamples(ex))
	if tl.Name() != "my-tool_1" {
		t.Errorf("Name = %q", tl.Name())
	}
	if tl.Description() != "Describes." {
		t.Errorf("Description = %q, want it trimmed", tl.Description())
	}
	if tl.Annotations() != a {
		t.Errorf("Annotations = %+v", tl.Annotations())
	}
	if got := tl.Examples(); len(got) != 2 || got[0] != ex {
		t.Errorf("Examples = %+v", got)
	}
	if err := tl.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

type undescribed struct {
	Good string `json:"good" jsonschema:"Fine."`
	Bad  string `json:"bad"`
}

type undescribedNested struct {
	Items []struct {
		X int `json:"x"`
	} `json:"items" jsonschema:"Described."`
}

type badDefault struct {
	N int `json:"n,omitempty" jsonschema:"N." default:"three"`
}

type defaultOnSkipped struct {
	A string `json:"a" jsonschema:"A."`
	B string `json:"-" default:"x"`
}

type exampleParams struct {
	StepID int    `json:"step_id" jsonschema:"The step."`
	Note   string `json:"note,omitempty" jsonschema:"A note."`
}

func TestCheckErrors(t *testing.T) {
	long := strings.Repeat("a", 201)
	tests := []struct {
		name string
		tool *tools.Tool
		want []string // every substring must be in the error; nil means valid
	}{
		{"valid", tools.New("ok", "Fine.", ann, handler[noParams](tools.Result[string]{})), nil},
		{"64-char name", tools.New(strings.Repeat("n", 64), "Fine.", ann, handler[noParams](tools.Result[string]{})), nil},
		{"200-char description", tools.New("ok", strings.Repeat("d", 200), ann, handler[noParams](tools.Result[string]{})), nil},
		{"description trimmed to 200", tools.New("ok", "  "+strings.Repeat("d", 200)+"\n", ann, handler[noParams](tools.Result[string]{})), nil},
		{"uppercase name", tools.New("Bad", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "Bad" must match`}},
		{"name with a space", tools.New("a b", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "a b" must match`}},
		{"65-char name", tools.New(strings.Repeat("n", 65), "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "` + strings.Repeat("n", 65) + `" must match`}},
		{"name with surrounding whitespace", tools.New(" ok ", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name " ok " must match`}},
		{"name with a trailing newline", tools.New("ok\n", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "ok\n" must match`}},
		{"empty name", tools.New("", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "" must match`}},
		{"dotted name", tools.New("a.b", "Fine.", ann, handler[noParams](tools.Result[string]{})), []string{`name "a.b" must match`}},
		{"empty description", tools.New("ok", "", ann, handler[noParams](tools.Result[string]{})), []string{"description must be 1 to 200 characters, has 0"}},
		{"blank description", tools.New("ok", " \t ", ann, handler[noParams](tools.Result[string]{})), []string{"description must be 1 to 200 characters, has 0"}},
		{"201-char description", tools.New("ok", long, ann, handler[noParams](tools.Result[string]{})), []string{"description must be 1 to 200 characters, has 201"}},
		{"non-ASCII description", tools.New("ok", "Café.", ann, handler[noParams](tools.Result[string]{})), []string{"description must be ASCII", `'é'`}},
		{"missing title", tools.New("ok", "Fine.", tools.Annotations{ReadOnly: true}, handler[noParams](tools.Result[string]{})), []string{"annotations must include a title"}},
		{"blank title", tools.New("ok", "Fine.", tools.Annotations{Title: "  "}, handler[noParams](tools.Result[string]{})), []string{"annotations must include a title"}},
		{"field without description", tools.New("ok", "Fine.", ann, handler[undescribed](tools.Result[string]{})), []string{"field /bad has no description"}},
		{"nested field without description", tools.New("ok", "Fine.", ann, handler[undescribedNested](tools.Result[string]{})), []string{"field /items/items/x has no description"}},
		{"params not a struct", tools.New("ok", "Fine.", ann, handler[string](tools.Result[string]{})), []string{"params type string must be a struct"}},
		{"default not JSON", tools.New("ok", "Fine.", ann, handler[badDefault](tools.Result[string]{})), []string{`field N: default "three" is not a JSON literal`}},
		{"default on a skipped field", tools.New("ok", "Fine.", ann, handler[defaultOnSkipped](tools.Result[string]{})), []string{"field B: default on a field that is not a property"}},
		{
			"valid examples",
			tools.New("ok", "Fine.", ann, handler[exampleParams](tools.Result[string]{}), tools.WithExamples(
				tools.Example{Description: "One.", Input: `{"step_id": 1}`},
				tools.Example{Description: "Two.", Input: `{"step_id": 2, "note": "n"}`, Output: "done"},
			)),
			nil,
		},
		{
			"example input fails the schema",
			tools.New("ok", "Fine.", ann, handler[exampleParams](tools.Result[string]{}), tools.WithExamples(
				tools.Example{Description: "Good.", Input: `{"step_id": 1}`},
				tools.Example{Description: "Bad.", Input: `{"step_id": "1", "extra": true}`},
			)),
			[]string{"example 2 input: /extra: unknown field; /step_id: expected integer, got string"},
		},
		{
			"example input not JSON",
			tools.New("ok", "Fine.", ann, handler[exampleParams](tools.Result[string]{}), tools.WithExamples(
				tools.Example{Description: "Bad.", Input: `{step_id: 1}`},
			)),
			[]string{"example 1 input: (root): invalid JSON"},
		},
		{
			"example without description",
			tools.New("ok", "Fine.", ann, handler[exampleParams](tools.Result[string]{}), tools.WithExamples(
				tools.Example{Input: `{"step_id": 1}`},
			)),
			[]string{"example 1 has no description"},
		},
		{
			"every problem is reported",
			tools.New("Bad Name", "", tools.Annotations{}, handler[undescribed](tools.Result[string]{})),
			[]string{`name "Bad Name"`, "description must be 1 to 200 characters", "annotations must include a title", "field /bad has no description"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tool.Check()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	tl := newTool[fullParams, fullResult](t)
	three := 3
	tests := []struct {
		name    string
		args    string
		want    fullParams
		wantErr string
	}{
		{
			name: "defaults applied to absent fields",
			args: `{"title": "t", "color": "red", "inner": {"name": "n"}}`,
			want: fullParams{Title: "t", Count: 3, Mode: "fast", Color: "red", Shade: "blue", Inner: Inner{Name: "n"}},
		},
		{
			name: "given values override defaults",
			args: `{"title": "t", "color": "green", "inner": {"name": "n", "weight": 2}, "count": 0, "mode": "slow", "shade": "red", "limit": 3, "tags": ["a"], "items": [{"name": "i"}], "colors": ["blue"], "opt": {"name": "o"}, "flag": true, "ratio": 0.5, "weights": {"w": 1}}`,
			want: fullParams{
				Title: "t", Count: 0, Mode: "slow", Color: "green", Shade: "red", Limit: &three,
				Tags: []string{"a"}, Inner: Inner{Name: "n", Weight: 2}, Items: []Inner{{Name: "i"}},
				Colors: []Color{"blue"}, Opt: &Inner{Name: "o"}, Flag: true, Ratio: 0.5, Weights: map[string]int{"w": 1},
			},
		},
		{name: "missing required", args: `{"color": "red", "inner": {"name": "n"}}`, wantErr: "/title: required field is missing"},
		{name: "enum enforced", args: `{"title": "t", "color": "pink", "inner": {"name": "n"}}`, wantErr: `/color: expected one of "red", "green", "blue"`},
		{name: "enum in a list enforced", args: `{"title": "t", "color": "red", "inner": {"name": "n"}, "colors": ["red", "pink"]}`, wantErr: `/colors/1: expected one of "red", "green", "blue"`},
		{name: "pointer field is not nullable", args: `{"title": "t", "color": "red", "inner": {"name": "n"}, "limit": null}`, wantErr: "/limit: expected integer, got null"},
		{name: "slice field is not nullable", args: `{"title": "t", "color": "red", "inner": {"name": "n"}, "tags": null}`, wantErr: "/tags: expected array, got null"},
		{name: "nested unknown field", args: `{"title": "t", "color": "red", "inner": {"name": "n", "x": 1}}`, wantErr: "/inner/x: unknown field"},
		{name: "no coercion", args: `{"title": "t", "color": "red", "inner": {"name": "n"}, "count": "1"}`, wantErr: "/count: expected integer, got string"},
		{name: "empty arguments", args: ``, wantErr: "/color: required field is missing; /inner: required field is missing; /title: required field is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tl.Parse([]byte(tt.args))
			if tt.wantErr != "" {
				var se *schema.Error
				if !errors.As(err, &se) || err.Error() != tt.wantErr {
					t.Fatalf("Parse error = %v (%T), want *schema.Error %q", err, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			p, ok := got.(fullParams)
			if !ok {
				t.Fatalf("Parse returned %T, want fullParams", got)
			}
			if !reflect.DeepEqual(p, tt.want) {
				t.Errorf("Parse =\n  %+v\nwant\n  %+v", p, tt.want)
			}
		})
	}
}

// TestParseDefaultsDoNotLeak checks that one call's arguments never become
// the next call's defaults.
func TestParseDefaultsDoNotLeak(t *testing.T) {
	tl := newTool[fullParams, fullResult](t)
	if _, err := tl.Parse([]byte(`{"title": "t", "color": "red", "inner": {"name": "n"}, "count": 9, "tags": ["x"]}`)); err != nil {
		t.Fatal(err)
	}
	got, err := tl.Parse([]byte(`{"title": "t", "color": "red", "inner": {"name": "n"}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := got.(fullParams)
	if p.Count != 3 || p.Tags != nil {
		t.Errorf("second Parse = %+v, want count 3 and no tags", p)
	}
}

func TestInvoke(t *testing.T) {
	errBoom := errors.New("boom")
	img := mcp.NewImageContent("AAAA", "image/png")
	s, err := session.NewRegistry().NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tl := tools.New("echo", "Echoes.", ann, func(ctx *tools.Context, p exampleParams) (tools.Result[*Inner], error) {
		switch p.StepID {
		case 1:
			return tools.OK("ok", &Inner{Name: p.Note}), nil
		case 2:
			return tools.Failf[*Inner]("step %d failed", p.StepID), nil
		case 3:
			return tools.Result[*Inner]{}, errBoom
		case 4:
			if ctx.Session != s {
				return tools.Fail[*Inner]("wrong session"), nil
			}
			return tools.Result[*Inner]{Message: "hidden", Value: &Inner{Name: "x"}, Success: true, ExcludeValueFromContext: true, Content: []mcp.Content{img}}, nil
		}
		return tools.Fail[*Inner]("unexpected"), nil
	})
	if err := tl.Check(); err != nil {
		t.Fatal(err)
	}
	call := &tools.Call{Tool: tl, Session: s}
	run := func(args string) (*tools.Outcome, error) {
		p, err := tl.Parse([]byte(args))
		if err != nil {
			t.Fatalf("Parse(%s): %v", args, err)
		}
		return tl.Invoke(tools.NewContext(context.Background(), call), p)
	}

	o, err := run(`{"step_id": 1, "note": "hi"}`)
	if err != nil || !o.Success || o.Class != tools.ClassNone || o.Message != "ok" || o.Value.(*Inner).Name != "hi" {
		t.Errorf("success: %+v, %v", o, err)
	}
	if got := o.Text(); got != "ok\n\n{\"name\":\"hi\"}" {
		t.Errorf("success text = %q", got)
	}
	o, err = run(`{"step_id": 2}`)
	if err != nil || o.Success || o.Class != tools.ClassFailure || o.Message != "step 2 failed" {
		t.Errorf("failure: %+v, %v", o, err)
	}
	o, err = run(`{"step_id": 3}`)
	if !errors.Is(err, errBoom) || o != nil {
		t.Errorf("Go error: %+v, %v; want nil, %v", o, err, errBoom)
	}
	o, err = run(`{"step_id": 4}`)
	if err != nil || !o.Success || !o.Exclude || len(o.Content) != 1 || o.Text() != "hidden" {
		t.Errorf("excluded: %+v, %v", o, err)
	}
}

// TestParseIntegralForms pins that numbers JSON Schema counts as integers
// decode into Go integers, and that one too large for the field is refused
// by field.
func TestParseIntegralForms(t *testing.T) {
	type params struct {
		N int `json:"n" jsonschema:"A number."`
	}
	tl := tools.New("t", "d", tools.Annotations{Title: "T"}, func(*tools.Context, params) (tools.Result[int], error) { return tools.OK("", 0), nil })
	for in, want := range map[string]int{`{"n":2.0}`: 2, `{"n":1e2}`: 100, `{"n":7}`: 7} {
		p, err := tl.Parse([]byte(in))
		if err != nil || p.(params).N != want {
			t.Errorf("Parse(%s) = %v, %v; want %d", in, p, err, want)
		}
	}
	if _, err := tl.Parse([]byte(`{"n":99999999999999999999}`)); err == nil || err.Error() != "/n: integer out of range" {
		t.Errorf("out-of-range integer: %v", err)
	}
}
