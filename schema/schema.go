// Package schema validates JSON values against a JSON Schema compiled once,
// and explains failures in words a model can act on: every offending field
// by JSON pointer and what was expected, e.g.
//
//	/step_id: expected integer, got string; /extra: unknown field
//
// and, for an unknown field, the field it most likely meant and the fields
// its object takes, in the order the schema declares them (Error.Explain):
//
//	Unknown argument 'replaceAll'; did you mean 'replace_all'? edit_file takes: file_path, old_string, new_string, replace_all.
//
// Validation never coerces: "1" is not an integer. Schemas are compiled with
// santhosh-tekuri/jsonschema/v5 with no network loader, so a $ref can only
// point inside the schema itself.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Validator checks JSON values against one compiled schema. It is safe for
// concurrent use.
type Validator struct {
	schema *jsonschema.Schema
	doc    json.RawMessage // the schema as compiled, for the order of its properties
}

// Compile compiles the JSON Schema doc (draft 2020-12 unless it says
// otherwise).
func Compile(doc json.RawMessage) (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote schema %q not allowed", s)
	}
	const url = "mem:///schema.json"
	if err := c.AddResource(url, bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Validator{schema: s, doc: doc}, nil
}

// Problem is one reason a value does not match: where, and what was wrong.
type Problem struct {
	// Pointer is the JSON pointer of the offending value ("" is the root).
	Pointer string
	// Message says what was expected, in plain words; UnknownField for a
	// field the schema does not allow.
	Message string
	// Known lists, for an unknown field, the fields its object takes, in
	// the order the schema declares them (empty for an object that takes
	// none); nil when the schema does not say (the field was refused by
	// unevaluatedProperties), and for every other problem.
	Known []string
}

// The messages of a problem about a field the schema does not allow, and
// about one it requires that is missing.
const (
	UnknownField  = "unknown field"
	RequiredField = "required field is missing"
)

// String returns "pointer: message", with "(root)" for the root.
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Message
}

// Error reports every problem found in one value.
type Error struct {
	Problems []Problem
}

// Error returns the problems joined by "; ".
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// ValidateJSON parses raw (an empty raw is an empty object) and validates it.
// Syntax errors and trailing data are reported as a problem at the root, a
// string that is not text (see NotText) as a problem at its pointer.
func (v *Validator) ValidateJSON(raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	val, err := Decode(raw)
	if err != nil {
		return &Error{Problems: []Problem{{Message: err.Error()}}}
	}
	if ptr, ok := NotText(raw); ok {
		return &Error{Problems: []Problem{{Pointer: ptr, Message: "not text: invalid UTF-8 or a lone surrogate"}}}
	}
	return v.Validate(val)
}

// Decode parses raw into the generic form Validate expects, with numbers
// kept exact as json.Number, so that validation never sees a rounded value.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: unexpected data after the value")
	}
	return val, nil
}

// Bounds on the numbers a value may hold (see outOfRange). Every number a
// tool can take (an int64, a float64) can be written within them.
const (
	maxNumberLen      = 128 // characters, as written
	maxNumberExponent = 400 // the exponent's magnitude, as written
)

// outOfRange appends a problem for each number in v that is longer than
// maxNumberLen or has an exponent beyond ±maxNumberExponent, with its
// pointer below v. The validator compares numbers as big.Rat, whose cost
// grows with both: 1e999999 alone took 17 ms, and math/big cannot hold
// 1e1000010 at all (a nil pointer dereference in jsonschema/v5, found by
// fuzzing). The check reads each number once, and writes pointers only
// for the numbers it refuses.
func outOfRange(v any, out *[]Problem) {
	// under prefixes the pointers of the problems found from the nth on
	// with a step down to where they lie.
	under := func(n int, step func() string) {
		if len(*out) > n {
			s := "/" + step()
			for i := n; i < len(*out); i++ {
				(*out)[i].Pointer = s + (*out)[i].Pointer
			}
		}
	}
	switch v := v.(type) {
	case json.Number:
		if len(v) > maxNumberLen || exponentBeyond(string(v), maxNumberExponent) {
			*out = append(*out, Problem{Message: fmt.Sprintf("number out of range: at most %d characters, with an exponent from -%d to %d", maxNumberLen, maxNumberExponent, maxNumberExponent)})
		}
	case []any:
		for i, x := range v {
			n := len(*out)
			outOfRange(x, out)
			under(n, func() string { return strconv.Itoa(i) })
		}
	case map[string]any:
		for k, x := range v {
			n := len(*out)
			outOfRange(x, out)
			under(n, func() string { return escape(k) })
		}
	}
}

// exponentBeyond reports whether n, a JSON number, has an exponent whose
// magnitude is over limit.
func exponentBeyond(n string, limit int) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	e := strings.TrimLeft(n[i+1:], "+-")
	e = strings.TrimLeft(e, "0")
	if len(e) > len(strconv.Itoa(limit)) {
		return true
	}
	x, _ := strconv.Atoi(e)
	return x > limit
}

// Validate checks a value decoded by Decode (or any value built from maps,
// slices, strings, bools, json.Number and float64).
func (v *Validator) Validate(val any) error {
	var probs []Problem
	// Numbers out of range are refused before the validator sees them.
	if outOfRange(val, &probs); len(probs) == 0 {
		err := v.schema.Validate(val)
		if err == nil {
			return nil
		}
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return &Error{Problems: []Problem{{Message: err.Error()}}}
		}
		v.collect(ve, &probs)
	}
	slices.SortStableFunc(probs, func(a, b Problem) int { return strings.Compare(a.Pointer, b.Pointer) })
	probs = slices.CompactFunc(probs, func(a, b Problem) bool { return a.Pointer == b.Pointer && a.Message == b.Message })
	return &Error{Problems: probs}
}

// collect appends the problems of the leaves of ve's cause tree.
func (v *Validator) collect(ve *jsonschema.ValidationError, out *[]Problem) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			v.collect(c, out)
		}
		return
	}
	keyword := ve.KeywordLocation[strings.LastIndexByte(ve.KeywordLocation, '/')+1:]
	loc := pointer(ve.InstanceLocation)
	switch {
	case keyword == "additionalProperties":
		known := v.declared(ve.AbsoluteKeywordLocation)
		for _, name := range quotedNames(ve.Message) {
			*out = append(*out, Problem{Pointer: loc + "/" + escape(name), Message: UnknownField, Known: known})
		}
	case keyword == "unevaluatedProperties":
		// The library reports each field on its own, at the field's
		// location, as "not allowed".
		*out = append(*out, Problem{Pointer: loc, Message: UnknownField})
	case keyword == "required" && strings.HasPrefix(ve.Message, "missing properties: "):
		for _, name := range quotedNames(ve.Message) {
			*out = append(*out, Problem{Pointer: loc + "/" + escape(name), Message: RequiredField})
		}
	default:
		*out = append(*out, Problem{Pointer: loc, Message: plain(keyword, ve.Message)})
	}
}

// pointer turns the library's instance location, whose segments are
// URL-path-escaped ("/it%27s"), into a plain JSON pointer ("/it's"), the
// form the names of unknown and missing fields take.
func pointer(loc string) string {
	if p, err := url.PathUnescape(loc); err == nil {
		return p
	}
	return loc
}

// plain rewrites the library's message for keyword in plainer words.
func plain(keyword, msg string) string {
	switch keyword {
	case "type":
		// "expected integer, but got string"
		return strings.Replace(msg, ", but got ", ", got ", 1)
	case "enum":
		if rest, ok := strings.CutPrefix(msg, "value must be one of "); ok {
			return "expected one of " + rest
		}
	case "const":
		if rest, ok := strings.CutPrefix(msg, "value must be "); ok {
			return "expected " + rest
		}
	case "minLength":
		if rest, ok := strings.CutPrefix(msg, "length must be >= "); ok {
			n, _, _ := strings.Cut(rest, ",")
			return "expected at least " + n + " characters"
		}
	case "maxLength":
		if rest, ok := strings.CutPrefix(msg, "length must be <= "); ok {
			n, _, _ := strings.Cut(rest, ",")
			return "expected at most " + n + " characters"
		}
	case "minItems":
		if rest, ok := strings.CutPrefix(msg, "minimum "); ok {
			n, _, _ := strings.Cut(rest, " ")
			return "expected at least " + n + " items"
		}
	case "maxItems":
		if rest, ok := strings.CutPrefix(msg, "maximum "); ok {
			n, _, _ := strings.Cut(rest, " ")
			return "expected at most " + n + " items"
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		// "must be >= 0 but found -1"
		return strings.Replace(msg, " but found ", ", got ", 1)
	}
	return msg
}

// quotedNames extracts the names the library quotes as 'name' in msg,
// undoing its escaping.
func quotedNames(msg string) []string {
	var names []string
	for i := 0; i < len(msg); i++ {
		if msg[i] != '\'' {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(msg) && msg[j] != '\''; j++ {
			if msg[j] == '\\' && j+1 < len(msg) {
				b.WriteByte(msg[j])
				j++
			}
			b.WriteByte(msg[j])
		}
		inner := strings.ReplaceAll(b.String(), `\'`, `'`)
		inner = strings.ReplaceAll(inner, `"`, `\"`)
		if s, err := strconv.Unquote(`"` + inner + `"`); err == nil {
			names = append(names, s)
		} else {
			names = append(names, inner)
		}
		i = j
	}
	return names
}

// escape encodes name as one JSON pointer segment.
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}
