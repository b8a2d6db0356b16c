package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

const schemaURL = "https://github.com/wink-mcp/wink-mcp/config/schema.json"

// generate returns the JSON Schema of the configuration file, made from
// the Config type by jsonschema.ForType (keys from json tags, descriptions
// from jsonschema tags, no unknown keys) and completed by annotate.
func generate() ([]byte, error) {
	t := reflect.TypeFor[Config]()
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("config: schema: %w", err)
	}
	if err := annotate(t, reflect.ValueOf(*Default()), s); err != nil {
		return nil, fmt.Errorf("config: schema: %w", err)
	}
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = schemaURL
	s.Title = "wink-mcp configuration"
	s.Description = "The wink-mcp server configuration file. Every key is optional; an empty file is the default configuration."
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("config: schema: %w", err)
	}
	return append(data, '\n'), nil
}

var durationType = reflect.TypeFor[time.Duration]()

// enum is implemented by named string types whose values are a fixed set,
// such as tools.Enum.
type enum interface{ Enum() []string }

var enumType = reflect.TypeFor[enum]()

// annotate completes the schema s that jsonschema.ForType made for t, whose
// default value is def (invalid where Default has none: in lists, maps and
// pointers):
//
//   - no value may be null, and no key is required unless its schema tag
//     says so;
//   - a time.Duration is a string in the go-duration format, such as "30s",
//     and its description says so;
//   - a type with an Enum method takes those values;
//   - a field's schema tag adds its keywords (see applyTag);
//   - each value of a type other than a struct, list or map has Default's
//     value as its default, unless it is an empty string.
func annotate(t reflect.Type, def reflect.Value, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t, def = t.Elem(), reflect.Value{}
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	s.Required = nil
	switch {
	case t == durationType:
		s.Type, s.Format = "string", "go-duration"
		s.Description += ` A Go duration, such as "30s" or "1m30s".`
	case t.Implements(enumType):
		for _, v := range reflect.Zero(t).Interface().(enum).Enum() {
			s.Enum = append(s.Enum, v)
		}
	}
	switch t.Kind() {
	case reflect.Slice:
		return annotate(t.Elem(), reflect.Value{}, s.Items)
	case reflect.Map:
		return annotate(t.Elem(), reflect.Value{}, s.AdditionalProperties)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			name = cmp.Or(name, f.Name)
			p := s.Properties[name]
			if f.Anonymous || !f.IsExported() || p == nil {
				continue
			}
			var fdef reflect.Value
			if def.IsValid() {
				fdef = def.FieldByIndex(f.Index)
			}
			if err := annotate(f.Type, fdef, p); err != nil {
				return err
			}
			if err := applyTag(s, name, p, f.Tag.Get("schema")); err != nil {
				return fmt.Errorf("%s.%s: %w", t, f.Name, err)
			}
		}
		return nil
	}
	if !def.IsValid() || def.Kind() == reflect.String && def.String() == "" {
		return nil
	}
	v := def.Interface()
	if d, ok := v.(time.Duration); ok {
		v = formatDuration(d)
	}
	var err error
	s.Default, err = json.Marshal(v)
	return err
}

// keywordTypes are the keywords a schema tag may hold, each with the types
// of value it is about.
var keywordTypes = map[string][]string{
	"minimum":     {"integer", "number"},
	"maximum":     {"integer", "number"},
	"minLength":   {"string"},
	"format":      {"string"},
	"minItems":    {"array"},
	"uniqueItems": {"array"},
}

// applyTag adds the keywords of a schema tag, such as
// "minItems=1,uniqueItems,format=principal", to the schema p of the
// property name of s. A keyword without a value is true. Each keyword goes
// on the first schema of a type it is about, p or one under p's list
// items and map values: minLength on a list of strings is about each
// string. The keyword required makes the key required in s.
func applyTag(s *jsonschema.Schema, name string, p *jsonschema.Schema, tag string) error {
	if tag == "" {
		return nil
	}
	for _, kw := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(kw, "=")
		if k == "required" {
			s.Required = append(s.Required, name)
			continue
		}
		types, ok := keywordTypes[k]
		if !ok {
			return fmt.Errorf("unknown keyword %q in schema tag", k)
		}
		at := p
		for at != nil && !slices.Contains(types, at.Type) {
			at = cmp.Or(at.Items, at.AdditionalProperties)
		}
		if at == nil {
			return fmt.Errorf("keyword %q of the schema tag is about none of the values", k)
		}
		var err error
		switch k {
		case "minimum":
			at.Minimum, err = parseNumber(v)
		case "maximum":
			at.Maximum, err = parseNumber(v)
		case "minLength":
			at.MinLength, err = parseCount(v)
		case "minItems":
			at.MinItems, err = parseCount(v)
		case "uniqueItems":
			at.UniqueItems = true
		case "format":
			at.Format = v
		}
		if err != nil {
			return fmt.Errorf("schema tag %q: %w", kw, err)
		}
	}
	return nil
}

func parseNumber(s string) (*float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	return &f, err
}

func parseCount(s string) (*int, error) {
	n, err := strconv.Atoi(s)
	return &n, err
}

// formatDuration writes d as time.Duration.String does, without the zero
// units at its end: "30m" rather than "30m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
