package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strings"
)

// quickSchema checks generic JSON values (from schema.Decode) against the
// subset of JSON Schema that output schemas inferred from Go types use:
// type, properties, required, additionalProperties, items and enum (of
// scalars), plus annotations. It is a fast path in front of the full
// validator, whose pass on every call would cost more than the rest of the
// call: a value it accepts is valid; one it rejects is checked again by the
// full validator, which explains the problem. A schema with any other
// keyword is not compiled, and only the full validator runs.
type quickSchema struct {
	anything bool // the true schema, or one without constraints
	types    typeSet
	props    map[string]*quickSchema
	required []string
	reqIndex map[string]int // required key -> its bit in scan's bitset
	closed   bool           // additionalProperties: false
	extra    *quickSchema   // additionalProperties as a schema
	items    *quickSchema
	enum     []any // strings, float64s, bools and nils
}

type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeNames = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber, "integer": tInteger, "string": tString,
}

// annotations are keywords that do not constrain values.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "readOnly": true,
	"writeOnly": true, "deprecated": true,
}

// compileQuick compiles raw, or reports false when it uses a keyword
// outside the subset.
func compileQuick(raw json.RawMessage) (*quickSchema, bool) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, false
	}
	return compileQuickValue(doc)
}

func compileQuickValue(doc any) (*quickSchema, bool) {
	switch d := doc.(type) {
	case bool:
		if d {
			return &quickSchema{anything: true}, true
		}
		return nil, false
	case map[string]any:
		q := &quickSchema{anything: true}
		for k, v := range d {
			if annotations[k] {
				continue
			}
			q.anything = false
			switch k {
			case "type":
				switch t := v.(type) {
				case string:
					if typeNames[t] == 0 {
						return nil, false
					}
					q.types |= typeNames[t]
				case []any:
					for _, x := range t {
						s, _ := x.(string)
						if typeNames[s] == 0 {
							return nil, false
						}
						q.types |= typeNames[s]
					}
				default:
					return nil, false
				}
			case "properties":
				m, ok := v.(map[string]any)
				if !ok {
					return nil, false
				}
				q.props = map[string]*quickSchema{}
				for name, ps := range m {
					p, ok := compileQuickValue(ps)
					if !ok {
						return nil, false
					}
					q.props[name] = p
				}
			case "required":
				list, ok := v.([]any)
				if !ok {
					return nil, false
				}
				for _, x := range list {
					s, ok := x.(string)
					if !ok {
						return nil, false
					}
					q.required = append(q.required, s)
				}
			case "additionalProperties":
				switch a := v.(type) {
				case bool:
					q.closed = !a
				default:
					e, ok := compileQuickValue(a)
					if !ok {
						return nil, false
					}
					q.extra = e
				}
			case "items":
				it, ok := compileQuickValue(v)
				if !ok {
					return nil, false
				}
				q.items = it
			case "enum":
				list, ok := v.([]any)
				if !ok {
					return nil, false
				}
				for _, x := range list {
					switch x.(type) {
					case string, float64, bool, nil:
					default:
						return nil, false
					}
				}
				q.enum = list
			default:
				return nil, false
			}
		}
		if len(q.required) > 0 {
			// Each required key once, with its bit.
			unique := q.required[:0:0]
			q.reqIndex = map[string]int{}
			for _, r := range q.required {
				if _, dup := q.reqIndex[r]; !dup {
					q.reqIndex[r] = len(unique)
					unique = append(unique, r)
				}
			}
			q.required = unique
		}
		return q, true
	}
	return nil, false
}

// valid reports whether v satisfies the schema.
func (q *quickSchema) valid(v any) bool {
	if q.anything {
		return true
	}
	if q.types != 0 && !q.types.has(v) {
		return false
	}
	if q.enum != nil && !inEnum(q.enum, v) {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for _, r := range q.required {
			if _, ok := v[r]; !ok {
				return false
			}
		}
		for k, x := range v {
			if p, ok := q.props[k]; ok {
				if !p.valid(x) {
					return false
				}
				continue
			}
			if q.closed {
				return false
			}
			if q.extra != nil && !q.extra.valid(x) {
				return false
			}
		}
	case []any:
		if q.items != nil {
			for _, x := range v {
				if !q.items.valid(x) {
					return false
				}
			}
		}
	}
	return true
}

func (t typeSet) has(v any) bool {
	switch v := v.(type) {
	case nil:
		return t&tNull != 0
	case bool:
		return t&tBoolean != 0
	case string:
		return t&tString != 0
	case map[string]any:
		return t&tObject != 0
	case []any:
		return t&tArray != 0
	case float64:
		return t&tNumber != 0 || (t&tInteger != 0 && v == math.Trunc(v) && !math.IsInf(v, 0))
	case json.Number:
		return t&tNumber != 0 || (t&tInteger != 0 && isInteger(v))
	}
	return false
}

// ratOK reports whether math/big.Rat can hold the number, as the full
// validator needs (Validator.Validate refuses the others); the fast path
// leaves any other number to it.
func ratOK(num []byte) bool {
	if !bytes.ContainsAny(num, "eE") {
		return true
	}
	_, ok := new(big.Rat).SetString(string(num))
	return ok
}

// isInteger reports whether n is an integer, 1.0 and 1e2 included.
func isInteger(n json.Number) bool {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return true
	}
	f, _, err := big.ParseFloat(s, 10, 0, big.ToNearestEven)
	return err == nil && f.IsInt()
}

func inEnum(enum []any, v any) bool {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return false
		}
		v = f
	}
	for _, e := range enum {
		if e == v {
			return true
		}
	}
	return false
}

// validJSON reports whether the JSON document raw, which must be valid
// JSON (it is what the encoder wrote), surely satisfies the schema, scanning it without decoding. It
// answers false for a mismatch and for anything it does not handle
// (escaped keys or enum strings, non-integral numbers where an integer is
// wanted, more than 64 required keys), which the full validator then
// decides.
func (q *quickSchema) validJSON(raw []byte) bool {
	s := scanner{b: raw}
	if !q.scan(&s) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// next reads what follows an object's member or an array's element: a
// comma, when more follow (more is true), or the closing byte end. ok is
// false for anything else.
func (s *scanner) next(end byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true, true
	case end:
		s.i++
		return false, true
	}
	return false, false
}

// str scans a string and returns its contents, and whether it had no
// escapes (the contents are raw bytes then).
func (s *scanner) str() ([]byte, bool, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	plain := true
	for i := start; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			plain = false
			i++
		case '"':
			s.i = i + 1
			return s.b[start:i], plain, true
		}
	}
	return nil, false, false
}

// number scans a number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	return s.b[start:s.i], s.i > start
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// scan checks the value at s against q and moves past it.
func (q *quickSchema) scan(s *scanner) bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if !q.anything && q.types != 0 && q.types&tObject == 0 || q.enum != nil {
			return false
		}
		if len(q.required) > 64 {
			return false
		}
		var seen uint64
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return len(q.required) == 0 || q.anything
		}
		for {
			s.space()
			key, plain, ok := s.str()
			if !ok || !plain {
				return false
			}
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			sub := q.extra
			if q.anything {
				sub = anySchema
			} else if p, ok := q.props[string(key)]; ok {
				sub = p
			} else if q.closed {
				return false
			}
			if j, ok := q.reqIndex[string(key)]; ok {
				if seen&(1<<j) != 0 {
					return false // a duplicate key
				}
				seen |= 1 << j
			}
			if sub == nil {
				sub = anySchema
			}
			if !sub.scan(s) {
				return false
			}
			more, ok := s.next('}')
			if !ok {
				return false
			}
			if more {
				continue
			}
			return q.anything || seen == 1<<len(q.required)-1
		}
	case c == '[':
		if !q.anything && q.types != 0 && q.types&tArray == 0 || q.enum != nil {
			return false
		}
		items := q.items
		if items == nil || q.anything {
			items = anySchema
		}
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !items.scan(s) {
				return false
			}
			more, ok := s.next(']')
			if !ok {
				return false
			}
			if more {
				continue
			}
			return true
		}
	case c == '"':
		str, plain, ok := s.str()
		if !ok {
			return false
		}
		if q.anything {
			return true
		}
		if q.types != 0 && q.types&tString == 0 {
			return false
		}
		if q.enum != nil {
			if !plain {
				return false
			}
			for _, e := range q.enum {
				if es, ok := e.(string); ok && es == string(str) {
					return true
				}
			}
			return false
		}
		return true
	case c == 't' || c == 'f':
		b := c == 't'
		lit := "false"
		if b {
			lit = "true"
		}
		return s.literal(lit) && q.acceptsLiteral(tBoolean, b)
	case c == 'n':
		return s.literal("null") && q.acceptsLiteral(tNull, nil)
	default:
		num, ok := s.number()
		if !ok || !ratOK(num) {
			return false
		}
		if q.anything {
			return true
		}
		integral := !strings.ContainsAny(string(num), ".eE")
		switch {
		case q.types == 0, q.types&tNumber != 0:
		case q.types&tInteger != 0 && integral:
		default:
			return false
		}
		return q.enum == nil || inEnum(q.enum, json.Number(num))
	}
}

// acceptsLiteral reports whether q accepts v, a literal (true, false or
// null) of type t.
func (q *quickSchema) acceptsLiteral(t typeSet, v any) bool {
	if q.anything {
		return true
	}
	if q.types != 0 && q.types&t == 0 {
		return false
	}
	return q.enum == nil || inEnum(q.enum, v)
}

// anySchema accepts any value.
var anySchema = &quickSchema{anything: true}
