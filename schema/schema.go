// Package schema validates JSON values against a JSON Schema compiled once,
// and explains failures in words a model can act on: every offending field
// by JSON pointer and what was expected, e.g.
//
//	/step_id: expected integer, got string; /extra: unknown field
//
// Validation never coerces: "1" is not an integer. Schemas are compiled with
// santhosh-tekuri/jsonschema/v5 with no network loader, so a $ref can only
// point inside the schema itself.
//
// In front of v5 sits a fast path for the subset of JSON Schema that
// schemas inferred from Go types use (type, properties, required,
// additionalProperties, items, enum, annotations), which scans the JSON
// without decoding it. It only ever accepts: a value it accepts is one v5
// accepts (a fuzz target holds it to that), and anything else goes to v5,
// which decides and explains. A schema with any other keyword has no fast
// path.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Validator checks JSON values against one compiled schema. It is safe for
// concurrent use.
type Validator struct {
	// quick is the fast path for the subset of JSON Schema that schemas
	// inferred from Go types use, or nil: what it accepts is valid, and
	// anything it rejects goes to the full validator, which decides and
	// explains.
	quick *quickSchema

	doc     json.RawMessage
	once    sync.Once // compiles full from doc, when deferred
	full    *jsonschema.Schema
	fullErr error
}

// Compile compiles the JSON Schema doc (draft 2020-12 unless it says
// otherwise).
func Compile(doc json.RawMessage) (*Validator, error) {
	v := &Validator{doc: doc}
	if _, err := v.schema(); err != nil {
		return nil, err
	}
	if q, ok := compileQuick(doc); ok {
		v.quick = q
	}
	return v, nil
}

// CompileDeferred is Compile for a schema known to be well formed, such as
// one inferred from a Go type: when the fast path covers the schema, the
// full validator is compiled only when first needed (most schemas of a
// server never meet a value the fast path does not accept), which keeps it
// out of the server's start. Otherwise it is compiled at once.
func CompileDeferred(doc json.RawMessage) (*Validator, error) {
	q, ok := compileQuick(doc)
	if !ok {
		return Compile(doc)
	}
	return &Validator{doc: doc, quick: q}, nil
}

// schema returns the full validator, compiling it on first use.
func (v *Validator) schema() (*jsonschema.Schema, error) {
	v.once.Do(func() { v.full, v.fullErr = compileFull(v.doc) })
	return v.full, v.fullErr
}

// compileFull compiles doc with jsonschema/v5.
func compileFull(doc json.RawMessage) (*jsonschema.Schema, error) {
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
	return s, nil
}

// Problem is one reason a value does not match: where, and what was wrong.
type Problem struct {
	// Pointer is the JSON pointer of the offending value ("" is the root).
	Pointer string
	// Message says what was expected, in plain words.
	Message string
}

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
// Syntax errors and trailing data are reported as a problem at the root.
func (v *Validator) ValidateJSON(raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if v.quick != nil && json.Valid(raw) && v.quick.validJSON(raw) {
		return nil
	}
	val, err := Decode(raw)
	if err != nil {
		return &Error{Problems: []Problem{{Message: err.Error()}}}
	}
	return v.Validate(val)
}

// Decode parses raw into the generic form Validate expects. Numbers are
// float64 when that is exact (no more than 15 digits in a row), and
// json.Number otherwise, so that validation never sees a rounded value.
func Decode(raw []byte) (any, error) {
	if !longDigitRun(raw) {
		// The fast path; on error, the exact path below explains it.
		var val any
		if json.Unmarshal(raw, &val) == nil {
			return val, nil
		}
	}
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

// unrepresentable finds a number in v that math/big cannot hold, such as
// 1e1000010: the validator compares numbers as big.Rat and would fail on
// it (a nil pointer dereference in jsonschema/v5, found by fuzzing).
func unrepresentable(v any) (json.Number, bool) {
	switch v := v.(type) {
	case json.Number:
		if _, ok := new(big.Rat).SetString(string(v)); !ok {
			return v, true
		}
	case []any:
		for _, x := range v {
			if n, ok := unrepresentable(x); ok {
				return n, true
			}
		}
	case map[string]any:
		for _, x := range v {
			if n, ok := unrepresentable(x); ok {
				return n, true
			}
		}
	}
	return "", false
}

// longDigitRun reports whether raw holds more than 15 decimal digits in a
// row, the most a float64 keeps exactly. Digits inside strings count too;
// they only send the value down the slower, exact path.
func longDigitRun(raw []byte) bool {
	run := 0
	for _, c := range raw {
		if c >= '0' && c <= '9' {
			if run++; run > 15 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// Validate checks a value decoded by Decode (or any value built from maps,
// slices, strings, bools, json.Number and float64).
func (v *Validator) Validate(val any) error {
	if n, ok := unrepresentable(val); ok {
		return &Error{Problems: []Problem{{Message: fmt.Sprintf("number %s is out of range", n)}}}
	}
	if v.quick != nil && v.quick.valid(val) {
		return nil
	}
	full, err := v.schema()
	if err != nil {
		return &Error{Problems: []Problem{{Message: "the schema cannot be used: " + err.Error()}}}
	}
	err = full.Validate(val)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Problems: []Problem{{Message: err.Error()}}}
	}
	var probs []Problem
	collect(ve, &probs)
	slices.SortStableFunc(probs, func(a, b Problem) int { return strings.Compare(a.Pointer, b.Pointer) })
	probs = slices.Compact(probs)
	return &Error{Problems: probs}
}

// collect appends the problems of the leaves of ve's cause tree.
func collect(ve *jsonschema.ValidationError, out *[]Problem) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	keyword := ve.KeywordLocation[strings.LastIndexByte(ve.KeywordLocation, '/')+1:]
	loc := pointer(ve.InstanceLocation)
	switch {
	case keyword == "additionalProperties" || keyword == "unevaluatedProperties":
		for _, name := range quotedNames(ve.Message) {
			*out = append(*out, Problem{Pointer: loc + "/" + escape(name), Message: "unknown field"})
		}
	case keyword == "required" && strings.HasPrefix(ve.Message, "missing properties: "):
		for _, name := range quotedNames(ve.Message) {
			*out = append(*out, Problem{Pointer: loc + "/" + escape(name), Message: "required field is missing"})
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
