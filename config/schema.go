package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// compiledSchema is the configuration's schema: as schema.json holds it,
// compiled, and in its plain JSON form, which error messages consult for
// enum values, known keys and the like.
type compiledSchema struct {
	json   []byte
	schema *jsonschema.Schema
	doc    any
}

var loadSchema = sync.OnceValues(func() (*compiledSchema, error) {
	data, err := generate()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(schemaURL, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("config: loading schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("config: compiling schema: %w", err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // so that limits print as written
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("config: reading schema: %w", err)
	}
	return &compiledSchema{json: data, schema: s, doc: doc}, nil
})

// validate checks the tree against the schema and returns every problem.
func (t *tree) validate(cs *compiledSchema) ([]*KeyError, error) {
	err := cs.schema.Validate(t.root)
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
// error's keyword location.
func (t *tree) explain(doc any, e *jsonschema.ValidationError) []*KeyError {
	segs := splitPointer(e.KeywordLocation)
	value, path := pointer(t.root, e.InstanceLocation)
	if len(segs) == 0 {
		return []*KeyError{t.keyError(path, "%s", e.Message)}
	}
	keyword := segs[len(segs)-1]
	rule := lookup(doc, segs)
	schema, _ := lookup(doc, segs[:len(segs)-1]).(map[string]any)

	switch keyword {
	case "additionalProperties":
		m, _ := value.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		known := slices.Sorted(maps.Keys(props))
		var errs []*KeyError
		for name := range m {
			if _, ok := props[name]; !ok {
				p := append(path[:len(path):len(path)], name)
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
			if _, ok := m[name]; !ok {
				errs = append(errs, t.keyError(path, "missing required key %q", name))
			}
		}
		return errs
	case "type":
		return []*KeyError{t.keyError(path, "expected %s, got %s", jsonTypeName(rule), typeName(value))}
	case "enum":
		list, _ := rule.([]any)
		words := make([]string, len(list))
		for i, x := range list {
			words[i] = fmt.Sprint(x)
		}
		return []*KeyError{t.keyError(path, "must be one of: %s", strings.Join(words, ", "))}
	case "minimum":
		return []*KeyError{t.keyError(path, "must be at least %v, got %v", rule, value)}
	case "maximum":
		return []*KeyError{t.keyError(path, "must be at most %v, got %v", rule, value)}
	case "minLength", "minItems":
		if fmt.Sprint(rule) == "1" {
			return []*KeyError{t.keyError(path, "must not be empty")}
		}
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
	}
	return []*KeyError{t.keyError(path, "%s", e.Message)}
}

// jsonTypeName returns the words error messages use for a JSON Schema type.
func jsonTypeName(t any) string {
	switch t {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return fmt.Sprint(t)
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

// lookup returns the value at the schema path segs within doc, or nil.
func lookup(doc any, segs []string) any {
	v := doc
	for _, s := range segs {
		m, _ := v.(map[string]any)
		v = m[s]
	}
	return v
}
