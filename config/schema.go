package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schemaJSON is the JSON Schema of the configuration file. It is the one
// place that says which keys exist and what values they take; the Go side
// of each key is a json-tagged field of Config (see file).
//
//go:embed schema.json
var schemaJSON []byte

const schemaURL = "https://github.com/wink-mcp/wink-mcp/config/schema.json"

// compiledSchema is the compiled schema together with its plain JSON form,
// which error messages consult for enum values, known keys and the like.
type compiledSchema struct {
	schema *jsonschema.Schema
	doc    any
}

var loadSchema = sync.OnceValues(func() (*compiledSchema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(schemaURL, bytes.NewReader(schemaJSON)); err != nil {
		return nil, fmt.Errorf("config: loading schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("config: compiling schema: %w", err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(schemaJSON))
	dec.UseNumber() // so that limits print as written
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("config: reading schema: %w", err)
	}
	return &compiledSchema{schema: s, doc: doc}, nil
})

// validate checks the tree against the schema and returns every problem.
func (t *tree) validate() ([]*KeyError, error) {
	cs, err := loadSchema()
	if err != nil {
		return nil, err
	}
	err = cs.schema.Validate(t.root)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("config: validating %s: %w", t.file, err)
	}
	var errs []*KeyError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			errs = append(errs, t.explain(cs.doc, e)...)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return errs, nil
}

// explain turns one leaf validation error into KeyErrors with plain-English
// messages. The schema keyword that failed is the last element of the
// error's absolute keyword location, which points into the schema document
// after any $ref has been followed.
func (t *tree) explain(doc any, e *jsonschema.ValidationError) []*KeyError {
	_, frag, _ := strings.Cut(e.AbsoluteKeywordLocation, "#")
	segs := splitPointer(frag)
	value, path := pointer(t.root, e.InstanceLocation)
	if len(segs) == 0 {
		return []*KeyError{t.keyError(path, "%s", e.Message)}
	}
	keyword := segs[len(segs)-1]
	rule, _ := lookup(doc, segs)
	parent, _ := lookup(doc, segs[:len(segs)-1])
	schema, _ := parent.(map[string]any)
	prefix := ""
	if slices.Contains(splitPointer(e.KeywordLocation), "propertyNames") {
		// The instance is a key, not its value. (Empty keys, which the
		// validator leaves out of instance locations, never get here.)
		if len(path) > 0 {
			value = path[len(path)-1]
		}
		prefix = "key "
	}
	branch, cond := condition(doc, segs)

	if rule == false && keyword != "additionalProperties" {
		// A "false" schema under properties: the key may not be present.
		switch branch {
		case "then":
			return []*KeyError{t.keyError(path, "not allowed when %s", cond)}
		case "else":
			return []*KeyError{t.keyError(path, "not allowed unless %s", cond)}
		}
		return []*KeyError{t.keyError(path, "not allowed")}
	}

	switch keyword {
	case "additionalProperties":
		m, _ := value.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		known := slices.Sorted(maps.Keys(props))
		var errs []*KeyError
		for name := range m {
			if _, ok := props[name]; ok {
				continue
			}
			p := append(path[:len(path):len(path)], name)
			if len(known) == 0 {
				errs = append(errs, t.keyError(p, "unknown key"))
			} else {
				errs = append(errs, t.keyError(p, "unknown key (known keys: %s)", strings.Join(known, ", ")))
			}
		}
		return errs
	case "required":
		m, _ := value.(map[string]any)
		req, _ := rule.([]any)
		var errs []*KeyError
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := m[name]; ok {
				continue
			}
			if branch == "then" {
				errs = append(errs, t.keyError(path, "missing required key %q (required when %s)", name, cond))
			} else {
				errs = append(errs, t.keyError(path, "missing required key %q", name))
			}
		}
		return errs
	case "type":
		var want []string
		switch r := rule.(type) {
		case string:
			want = []string{jsonTypeName(r)}
		case []any:
			for _, x := range r {
				s, _ := x.(string)
				want = append(want, jsonTypeName(s))
			}
		}
		return []*KeyError{t.keyError(path, "%sexpected %s, got %s", prefix, strings.Join(want, " or "), typeName(value))}
	case "enum":
		list, _ := rule.([]any)
		words := make([]string, len(list))
		for i, x := range list {
			words[i] = fmt.Sprint(x)
		}
		return []*KeyError{t.keyError(path, "%smust be one of: %s", prefix, strings.Join(words, ", "))}
	case "const":
		return []*KeyError{t.keyError(path, "%smust be %v", prefix, rule)}
	case "minimum":
		return []*KeyError{t.keyError(path, "%smust be at least %v, got %v", prefix, rule, value)}
	case "maximum":
		return []*KeyError{t.keyError(path, "%smust be at most %v, got %v", prefix, rule, value)}
	case "exclusiveMinimum":
		return []*KeyError{t.keyError(path, "%smust be greater than %v, got %v", prefix, rule, value)}
	case "exclusiveMaximum":
		return []*KeyError{t.keyError(path, "%smust be less than %v, got %v", prefix, rule, value)}
	case "minLength":
		if fmt.Sprint(rule) == "1" {
			return []*KeyError{t.keyError(path, "%smust not be empty", prefix)}
		}
		return []*KeyError{t.keyError(path, "%smust be at least %v characters long", prefix, rule)}
	case "maxLength":
		return []*KeyError{t.keyError(path, "%smust be at most %v characters long", prefix, rule)}
	case "minItems":
		if fmt.Sprint(rule) == "1" {
			return []*KeyError{t.keyError(path, "must not be empty")}
		}
		return []*KeyError{t.keyError(path, "must have at least %v items", rule)}
	case "maxItems":
		return []*KeyError{t.keyError(path, "must have at most %v items", rule)}
	case "uniqueItems":
		list, _ := value.([]any)
		var errs []*KeyError
		for j := range list {
			for i := range j {
				if equal(list[i], list[j]) {
					p := append(path[:len(path):len(path)], j)
					errs = append(errs, t.keyError(p, "duplicate entry %s (same as [%d])", quoteValue(list[j]), i))
					break
				}
			}
		}
		return errs
	case "pattern":
		return []*KeyError{t.keyError(path, "%smust match the pattern %v", prefix, rule)}
	}
	return []*KeyError{t.keyError(path, "%s%s", prefix, e.Message)}
}

// condition finds the innermost then or else branch among the schema path
// segs and describes its if-schema in words, such as "backend is disk".
func condition(doc any, segs []string) (branch, cond string) {
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i] != "then" && segs[i] != "else" {
			continue
		}
		parent, _ := lookup(doc, segs[:i])
		m, _ := parent.(map[string]any)
		ifSchema, ok := m["if"].(map[string]any)
		if !ok {
			continue
		}
		props, _ := ifSchema["properties"].(map[string]any)
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(props)) {
			p, _ := props[name].(map[string]any)
			if c, ok := p["const"]; ok {
				parts = append(parts, fmt.Sprintf("%s is %v", name, c))
			}
		}
		return segs[i], strings.Join(parts, " and ")
	}
	return "", ""
}

// jsonTypeName returns the word error messages use for a JSON Schema type.
func jsonTypeName(t string) string {
	switch t {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return t
}

// quoteValue renders a plain value for an error message.
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// equal reports whether two plain values are equal, as uniqueItems sees it.
func equal(a, b any) bool {
	switch a := a.(type) {
	case int64:
		if b, ok := b.(float64); ok {
			return float64(a) == b
		}
	case float64:
		if b, ok := b.(int64); ok {
			return a == float64(b)
		}
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// splitPointer splits a JSON pointer into unescaped segments.
func splitPointer(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// lookup returns the value at the schema path segs within doc.
func lookup(doc any, segs []string) (any, bool) {
	v := doc
	for _, s := range segs {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[s]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}
