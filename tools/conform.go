package tools

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// A conformer tells, without encoding it, that a value of a tool's result
// type matches the output schema inferred from that type. Most of the
// schema holds for every value of the type (a struct encodes as an object
// with exactly its fields, an int32 as an integer in range, and so on);
// what the type leaves open is checked on the value: that an Enum holds
// one of its values, that a float is finite, that a map is not nil. Types
// whose encoding the inferred schema does not follow field by field
// (custom marshalers, []byte, interfaces, embedded structs, the ",string"
// option) get no conformer, and their values are checked in their JSON
// form.
type conformer struct {
	typ   reflect.Type
	check func(reflect.Value) bool // nil when every value conforms
}

// newConformer returns the conformer of values of type t, or nil when t's
// values must be checked in their JSON form.
func newConformer(t reflect.Type) *conformer {
	check, ok := conformCheck(t, map[reflect.Type]bool{})
	if !ok {
		return nil
	}
	return &conformer{typ: t, check: check}
}

// conforms reports whether v certainly matches the output schema; false
// means it must be checked in its JSON form.
func (c *conformer) conforms(v any) bool {
	if c == nil || reflect.TypeOf(v) != c.typ {
		return false
	}
	return c.check == nil || c.check(reflect.ValueOf(v))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// conformCheck returns the check of values of type t (nil when every value
// conforms), or false when t cannot be reasoned about. visiting holds the
// types being compiled, to refuse recursive types.
func conformCheck(t reflect.Type, visiting map[reflect.Type]bool) (func(reflect.Value) bool, bool) {
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil, false
	}
	if visiting[t] {
		return nil, false
	}
	visiting[t] = true
	defer delete(visiting, t)

	if isEnum(t) {
		values := reflect.Zero(t).Interface().(Enum).Enum()
		return func(v reflect.Value) bool { return slices.Contains(values, v.String()) }, true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return nil, true
	case reflect.Float32, reflect.Float64:
		return func(v reflect.Value) bool {
			f := v.Float()
			return !math.IsNaN(f) && !math.IsInf(f, 0)
		}, true
	case reflect.Pointer:
		elem, ok := conformCheck(t.Elem(), visiting)
		if !ok {
			return nil, false
		}
		if isEnum(pointee(t)) {
			// The schema allows null, but null is not one of the values.
			return func(v reflect.Value) bool { return !v.IsNil() && elem(v.Elem()) }, true
		}
		if elem == nil {
			return nil, true
		}
		return func(v reflect.Value) bool { return v.IsNil() || elem(v.Elem()) }, true
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil, false // base64, not an array
		}
		elem, ok := conformCheck(t.Elem(), visiting)
		if !ok || elem == nil {
			return nil, ok
		}
		return func(v reflect.Value) bool {
			for i := range v.Len() {
				if !elem(v.Index(i)) {
					return false
				}
			}
			return true
		}, true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, false
		}
		elem, ok := conformCheck(t.Elem(), visiting)
		if !ok {
			return nil, false
		}
		// A nil map encodes as null, which an object schema refuses.
		return func(v reflect.Value) bool {
			if v.IsNil() {
				return false
			}
			if elem != nil {
				for it := v.MapRange(); it.Next(); {
					if !elem(it.Value()) {
						return false
					}
				}
			}
			return true
		}, true
	case reflect.Struct:
		return structCheck(t, visiting)
	}
	return nil, false // interfaces, channels, functions, complex numbers
}

// fieldCheck is the check of one struct field that needs one.
type fieldCheck struct {
	index     int
	omitEmpty bool // omitted when empty, as encoding/json defines it
	omitZero  bool // omitted when the zero value
	check     func(reflect.Value) bool
}

// structCheck returns the check of a struct type's encoded fields.
func structCheck(t reflect.Type, visiting map[reflect.Type]bool) (func(reflect.Value) bool, bool) {
	var fields []fieldCheck
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false // embedded fields: encoding/json's own rules
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validName(name) {
			return nil, false // encoding/json would use the field's name
		}
		fc := fieldCheck{index: i}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "string":
				return nil, false
			case "omitempty":
				fc.omitEmpty = true
			case "omitzero":
				if _, ok := f.Type.MethodByName("IsZero"); ok {
					return nil, false
				}
				fc.omitZero = true
			}
		}
		check, ok := conformCheck(f.Type, visiting)
		if !ok {
			return nil, false
		}
		if check != nil {
			fc.check = check
			fields = append(fields, fc)
		}
	}
	if len(fields) == 0 {
		return nil, true
	}
	return func(v reflect.Value) bool {
		for _, fc := range fields {
			fv := v.Field(fc.index)
			if fc.omitEmpty && isEmpty(fv) || fc.omitZero && fv.IsZero() {
				continue
			}
			if !fc.check(fv) {
				return false
			}
		}
		return true
	}, true
}

// isEmpty is encoding/json's rule for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isEnum reports whether t is an Enum, which the schema gives its values.
func isEnum(t reflect.Type) bool {
	return t.Kind() == reflect.String && t.Implements(enumType)
}

// pointee follows pointers from t.
func pointee(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// validName reports whether encoding/json takes name, from a json tag, as
// the key of its field.
func validName(name string) bool {
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
