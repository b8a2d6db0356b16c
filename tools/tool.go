package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wink-mcp/wink-mcp/schema"
)

// Annotations are the hints and title every tool states explicitly. MCP's
// defaults (destructive, open-world) are never relied on.
type Annotations struct {
	// Title is the human-readable name shown by clients.
	Title string
	// ReadOnly says the tool does not change its environment, nor the
	// state of its session: the calls of a read-only tool of one session
	// run together, without a snapshot (only its policies' OnResult may
	// record something, once it succeeded).
	ReadOnly bool
	// Destructive says a change may destroy data (meaningful when not
	// read-only).
	Destructive bool
	// Idempotent says repeating a call with the same arguments has no
	// further effect.
	Idempotent bool
	// OpenWorld says the tool reaches entities outside the server.
	OpenWorld bool
}

// Example shows the model one use of a tool. Examples are checked at startup
// (the input must satisfy the params schema) and rendered into the guidance
// of the tool's section.
type Example struct {
	Description string
	// Input is the example's arguments as a JSON object.
	Input string
	// Output is the text the call returns.
	Output string
}

// Enum is implemented by named string types whose values are a fixed set.
// Fields of such a type get an "enum" in the inferred schema.
type Enum interface {
	Enum() []string
}

// HandlerFunc is a typed tool handler.
type HandlerFunc[P, R any] func(ctx *Context, params P) (Result[R], error)

// Tool is a named, described, typed operation. Build it with New.
type Tool struct {
	name        string
	description string
	annotations Annotations
	examples    []Example

	input     json.RawMessage
	output    json.RawMessage
	validator *schema.Validator
	defaults  []byte // JSON object of top-level defaults, or nil
	decode    func(args []byte) (any, error)
	invoke    func(ctx *Context, params any) (*Outcome, error)

	rawInput json.RawMessage // an explicit input schema (WithInputSchema), or nil

	err error // a construction error, reported by Check
}

// Option configures a tool built by New.
type Option func(*Tool)

// WithExamples attaches examples to the tool.
func WithExamples(ex ...Example) Option {
	return func(t *Tool) { t.examples = append(t.examples, ex...) }
}

// WithInputSchema gives the tool an explicit input schema instead of the one
// inferred from its params type, for schemas Go types cannot express
// ($schema, $defs and $ref, composition). The schema is advertised and
// enforced as given; it must be a JSON object schema whose root has
// "type": "object", and the arguments it accepts must decode into the
// params type. The rule that every property is described is not applied
// to it.
func WithInputSchema(schema string) Option {
	return func(t *Tool) { t.rawInput = json.RawMessage(schema) }
}

// New builds a tool from a params struct P, a result type R and a handler.
// The schemas are inferred and compiled here, once. Problems (a bad name, a
// field without a description, an example that does not validate) are kept
// and reported by Check, so that startup can name the section and the tool.
//
// Params fields take their JSON names and optionality from their json tags
// (omitempty or omitzero means optional), their description from a
// jsonschema tag, and a default from a default tag (a JSON literal, or plain
// text for string fields).
func New[P, R any](name, description string, ann Annotations, h HandlerFunc[P, R], opts ...Option) *Tool {
	t := &Tool{
		name:        name,
		description: strings.TrimSpace(description),
		annotations: ann,
	}
	for _, o := range opts {
		o(t)
	}
	if t.rawInput != nil {
		if err := t.explicitInput(reflect.TypeFor[P]()); err != nil {
			t.err = err
			return t
		}
	} else if err := t.inferInput(reflect.TypeFor[P]()); err != nil {
		t.err = err
		return t
	}
	if err := t.inferOutput(reflect.TypeFor[R]()); err != nil {
		t.err = err
		return t
	}
	t.decode = func(args []byte) (any, error) {
		var p P
		if t.defaults != nil {
			if err := json.Unmarshal(t.defaults, &p); err != nil {
				return nil, fmt.Errorf("defaults: %w", err)
			}
		}
		if err := json.Unmarshal(args, &p); err != nil {
			return nil, err
		}
		return p, nil
	}
	t.invoke = func(ctx *Context, params any) (*Outcome, error) {
		r, err := h(ctx, params.(P))
		if err != nil {
			return nil, err
		}
		o := &Outcome{
			Message: r.Message,
			Value:   r.Value,
			Success: r.Success,
			Exclude: r.ExcludeValueFromContext,
			Content: r.Content,
		}
		if !r.Success {
			o.Class, o.Missing = ClassFailure, r.Missing
		}
		return o, nil
	}
	return t
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Description returns the tool's description, trimmed.
func (t *Tool) Description() string { return t.description }

// Annotations returns the tool's annotations.
func (t *Tool) Annotations() Annotations { return t.annotations }

// Examples returns the tool's examples.
func (t *Tool) Examples() []Example { return t.examples }

// InputSchema returns the advertised and enforced input schema.
func (t *Tool) InputSchema() json.RawMessage { return t.input }

// OutputSchema returns the output schema, or nil when the result type is not
// a struct.
func (t *Tool) OutputSchema() json.RawMessage { return t.output }

var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Check reports whether the tool obeys the naming, description, annotation
// and example rules, and whether its schemas could be built.
func (t *Tool) Check() error {
	var errs []error
	if !nameRE.MatchString(t.name) {
		errs = append(errs, fmt.Errorf("name %q must match %s", t.name, nameRE))
	}
	if n := len(t.description); n < 1 || n > 200 {
		errs = append(errs, fmt.Errorf("description must be 1 to 200 characters, has %d", n))
	}
	for _, r := range t.description {
		if r > unicode.MaxASCII {
			errs = append(errs, fmt.Errorf("description must be ASCII, has %q", r))
			break
		}
	}
	if strings.TrimSpace(t.annotations.Title) == "" {
		errs = append(errs, errors.New("annotations must include a title"))
	}
	if t.err != nil {
		errs = append(errs, t.err)
	}
	if t.err == nil {
		for i, ex := range t.examples {
			if strings.TrimSpace(ex.Description) == "" {
				errs = append(errs, fmt.Errorf("example %d has no description", i+1))
			}
			if err := t.validator.ValidateJSON([]byte(ex.Input)); err != nil {
				errs = append(errs, fmt.Errorf("example %d input: %w", i+1, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Parse validates raw arguments against the input schema and decodes them
// into the params type. Empty or null arguments are an empty object. The
// returned error is a *schema.Error for arguments that do not validate.
func (t *Tool) Parse(args []byte) (any, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if err := t.validator.ValidateJSON(args); err != nil {
		return nil, err
	}
	p, err := t.decode(args)
	if err == nil {
		return p, nil
	}
	// JSON Schema counts 2.0 and 1e2 as integers; Go's decoder does not.
	// Retry with such numbers written as integers.
	if norm, ok := integralForm(args); ok {
		if p, err = t.decode(norm); err == nil {
			return p, nil
		}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		msg := "expected " + te.Value + " to fit " + te.Type.String()
		if strings.HasPrefix(te.Value, "number") {
			msg = "integer out of range"
		}
		return nil, &schema.Error{Problems: []schema.Problem{{Pointer: "/" + strings.ReplaceAll(te.Field, ".", "/"), Message: msg}}}
	}
	return nil, err
}

// integralForm rewrites the integral numbers of args written with a
// fraction or exponent (2.0, 1e2) as plain integers. It reports false when
// there are none.
func integralForm(args []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case json.Number:
			if !strings.ContainsAny(string(v), ".eE") {
				return v
			}
			f, ok := new(big.Float).SetString(string(v))
			if !ok || !f.IsInt() {
				return v
			}
			i, _ := f.Int(nil)
			changed = true
			return json.Number(i.String())
		}
		return v
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// Invoke runs the typed handler with params decoded by Parse. A Go error from
// the handler is returned as is; the pipeline decides how to report it.
func (t *Tool) Invoke(ctx *Context, params any) (*Outcome, error) {
	return t.invoke(ctx, params)
}

func (t *Tool) inferInput(pt reflect.Type) error {
	if pt.Kind() != reflect.Struct {
		return fmt.Errorf("params type %s must be a struct", pt)
	}
	s, err := jsonschema.ForType(pt, &jsonschema.ForOptions{TypeSchemas: enumSchemas(pt)})
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	defaults, err := applyDefaults(pt, s)
	if err != nil {
		return err
	}
	t.defaults = defaults
	if err := requireDescriptions("", s); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	dropNull(s)
	raw, err := objectSchema(s)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	t.input = raw
	t.validator, err = schema.Compile(raw)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	return nil
}

// explicitInput checks and compiles a schema given with WithInputSchema.
func (t *Tool) explicitInput(pt reflect.Type) error {
	if pt.Kind() != reflect.Struct {
		return fmt.Errorf("params type %s must be a struct", pt)
	}
	var root struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.rawInput, &root); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if root.Type != "object" {
		return errors.New(`input schema: the root must have "type": "object"`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, t.rawInput); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	t.input = compact.Bytes()
	v, err := schema.Compile(t.input)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	t.validator = v
	return nil
}

// inferOutput infers the output schema of a result type: a struct, or a
// pointer to one, has one; other types have none.
func (t *Tool) inferOutput(result reflect.Type) error {
	for result.Kind() == reflect.Pointer {
		result = result.Elem()
	}
	if result.Kind() != reflect.Struct {
		return nil
	}
	s, err := jsonschema.ForType(result, &jsonschema.ForOptions{TypeSchemas: enumSchemas(result)})
	if err != nil {
		return fmt.Errorf("output schema: %w", err)
	}
	if t.output, err = objectSchema(s); err != nil {
		return fmt.Errorf("output schema: %w", err)
	}
	return nil
}

// objectSchema marshals s, making sure an object schema lists its
// properties even when there are none.
func objectSchema(s *jsonschema.Schema) (json.RawMessage, error) {
	if s.Type == "object" && s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if s.Type == "object" && !bytes.Contains(b, []byte(`"properties"`)) {
		// The library omits an empty properties map; state it explicitly.
		b = append([]byte(`{"type":"object","properties":{}`), b[len(`{"type":"object"`):]...)
	}
	return b, nil
}

var enumType = reflect.TypeFor[Enum]()

// enumSchemas finds the types reachable from t that implement Enum and maps
// each to a string schema listing its values.
func enumSchemas(t reflect.Type) map[reflect.Type]*jsonschema.Schema {
	out := map[reflect.Type]*jsonschema.Schema{}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		if t.Implements(enumType) && t.Kind() == reflect.String {
			vals := reflect.Zero(t).Interface().(Enum).Enum()
			s := &jsonschema.Schema{Type: "string"}
			for _, v := range vals {
				s.Enum = append(s.Enum, v)
			}
			out[t] = s
			return
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	return out
}

// applyDefaults copies default tags of t's fields into s and returns them as
// one JSON object, or nil when there are none.
func applyDefaults(t reflect.Type, s *jsonschema.Schema) ([]byte, error) {
	defaults := map[string]json.RawMessage{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("default")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		raw := json.RawMessage(tag)
		if f.Type.Kind() == reflect.String {
			raw, _ = json.Marshal(tag)
		}
		if !json.Valid(raw) {
			return nil, fmt.Errorf("field %s: default %q is not a JSON literal", f.Name, tag)
		}
		prop := s.Properties[name]
		if prop == nil {
			return nil, fmt.Errorf("field %s: default on a field that is not a property", f.Name)
		}
		prop.Default = raw
		defaults[name] = raw
	}
	if len(defaults) == 0 {
		return nil, nil
	}
	return json.Marshal(defaults)
}

// requireDescriptions reports the first property, at any depth, without a
// description.
func requireDescriptions(ptr string, s *jsonschema.Schema) error {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		at := ptr + "/" + name
		if strings.TrimSpace(p.Description) == "" {
			return fmt.Errorf("field %s has no description (add a jsonschema tag)", at)
		}
		if err := requireDescriptions(at, p); err != nil {
			return err
		}
	}
	if s.Items != nil {
		return requireDescriptions(ptr+"/items", s.Items)
	}
	return nil
}

// dropNull removes the "null" the library allows for slices and pointers, at
// any depth: arguments are never null, absent fields are left out instead.
func dropNull(s *jsonschema.Schema) {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	if s.Items != nil {
		dropNull(s.Items)
	}
}
