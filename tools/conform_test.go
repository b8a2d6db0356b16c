package tools_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Result types for the conformance check: every kind the check reasons
// about, and the places where a value can miss the schema its type infers
// (an Enum outside its values, a nil map, a null Enum pointer).
type (
	leaf struct {
		Color  Color            `json:"color"`
		Maybe  *Color           `json:"maybe"`
		Opt    Color            `json:"opt,omitempty"`
		OptPtr *Color           `json:"opt_ptr,omitempty"`
		Zero   Color            `json:"zero,omitzero"`
		Ratio  float64          `json:"ratio"`
		Small  float32          `json:"small,omitempty"`
		Tags   map[string]Color `json:"tags"`
		Extra  map[string]int   `json:"extra,omitempty"`
		Byte   int8             `json:"byte"`
		Count  uint16           `json:"count"`
		Flag   bool             `json:"flag"`
		Name   string           `json:"name"`
		Dash   string           `json:"-,"`
		Hidden string           `json:"-"`
		inner  Color
	}
	tree struct {
		Leaves   []leaf                   `json:"leaves"`
		Pair     [2]*leaf                 `json:"pair"`
		ByName   map[string][]Color       `json:"by_name,omitempty"`
		Deep     **leaf                   `json:"deep"`
		Matrix   [][]float64              `json:"matrix"`
		Plain    map[string]string        `json:"plain"`
		Optional map[string]*leaf         `json:"optional,omitempty"`
		Nested   struct{ Colors []Color } `json:"nested"`
	}
	// Types whose JSON form the schema does not follow field by field.
	withTime struct {
		At time.Time `json:"at"`
	}
	withBytes struct {
		Data []byte `json:"data"`
	}
	withAny struct {
		V any `json:"v"`
	}
	withEmbedded struct {
		leaf
		N int `json:"n"`
	}
	withStringOption struct {
		N int `json:"n,string"`
	}
)

func resultTool[R any]() *tools.Tool {
	return tools.New("t", "A tool.", tools.Annotations{Title: "T"},
		func(*tools.Context, struct{}) (tools.Result[R], error) { return tools.Result[R]{}, nil })
}

func compiledResultTool[R any](t *testing.T) (*tools.Tool, *schema.Validator) {
	t.Helper()
	tool := resultTool[R]()
	v, err := schema.Compile(tool.OutputSchema())
	if err != nil {
		t.Fatal(err)
	}
	return tool, v
}

// TestConformsAgreesWithSchema makes random values of the result types,
// half of them broken somewhere, and checks that Conforms says yes exactly
// when the value's JSON form matches the output schema (and never when it
// cannot be encoded).
func TestConformsAgreesWithSchema(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(t *testing.T, tool *tools.Tool, v *schema.Validator, typ reflect.Type) {
		var yes, no int
		for range 3000 {
			rv := randomValue(rng, typ, 0, rng.IntN(2) == 0)
			if rv.Kind() == reflect.Pointer && rv.IsNil() {
				continue // no structured content
			}
			val := rv.Interface()
			conforms := tool.Conforms(val)
			raw, err := json.Marshal(val)
			valid := err == nil && v.ValidateJSON(raw) == nil
			if conforms != valid {
				t.Fatalf("Conforms says %v, the schema says %v (encoding error %v) for\n%s", conforms, valid, err, raw)
			}
			if conforms {
				yes++
			} else {
				no++
			}
		}
		if yes < 100 || no < 100 {
			t.Errorf("%d values conform and %d do not: the test does not exercise both", yes, no)
		}
	}
	t.Run("leaf", func(t *testing.T) {
		tool, v := compiledResultTool[leaf](t)
		run(t, tool, v, reflect.TypeFor[leaf]())
	})
	t.Run("*tree", func(t *testing.T) {
		tool, v := compiledResultTool[*tree](t)
		run(t, tool, v, reflect.TypeFor[*tree]())
	})
}

// TestConformsRefuses: values of other types than the result type, and of
// types whose encoding the schema does not follow, are left to the JSON
// check.
func TestConformsRefuses(t *testing.T) {
	tool := resultTool[leaf]()
	good := leaf{Color: "red", Maybe: new(Color("blue")), Zero: "green", Tags: map[string]Color{}}
	if !tool.Conforms(good) {
		t.Fatal("a good leaf does not conform")
	}
	if tool.Conforms(&good) || tool.Conforms(map[string]any{"color": "red"}) {
		t.Error("a value of another type conforms")
	}
	for name, c := range map[string]func() bool{
		"time":     func() bool { return resultTool[withTime]().Conforms(withTime{}) },
		"bytes":    func() bool { return resultTool[withBytes]().Conforms(withBytes{}) },
		"any":      func() bool { return resultTool[withAny]().Conforms(withAny{V: 1}) },
		"embedded": func() bool { return resultTool[withEmbedded]().Conforms(withEmbedded{}) },
		"string":   func() bool { return resultTool[withStringOption]().Conforms(withStringOption{}) },
	} {
		if c() {
			t.Errorf("%s: conforms, want the JSON check", name)
		}
	}
}

// randomValue makes a random value of type typ, pointers and slices now
// and then nil. When breaking, enums and floats are now and then out of
// range, maps nil and pointers to an Enum nil (null is not one of its
// values).
func randomValue(rng *rand.Rand, typ reflect.Type, depth int, breaking bool) reflect.Value {
	v := reflect.New(typ).Elem()
	if typ.Kind() == reflect.String && typ.Implements(reflect.TypeFor[tools.Enum]()) {
		values := v.Interface().(tools.Enum).Enum()
		switch {
		case breaking && rng.IntN(8) == 0:
			v.SetString([]string{"", "purple"}[rng.IntN(2)])
		default:
			v.SetString(values[rng.IntN(len(values))])
		}
		return v
	}
	switch typ.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.String:
		v.SetString([]string{"", "a", "<&>", "\xff"}[rng.IntN(4)])
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(200)) - 100)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(200)))
	case reflect.Float32, reflect.Float64:
		switch rng.IntN(30) {
		case 0:
			if breaking {
				v.SetFloat(math.NaN())
			}
		case 1:
			if breaking {
				v.SetFloat(math.Inf(-1))
			}
		default:
			v.SetFloat(rng.NormFloat64() * 1e3)
		}
	case reflect.Pointer:
		enum := typ.Elem().Kind() == reflect.String && typ.Elem().Implements(reflect.TypeFor[tools.Enum]())
		if (!breaking && enum) || rng.IntN(6) > 0 && depth < 4 {
			p := reflect.New(typ.Elem())
			p.Elem().Set(randomValue(rng, typ.Elem(), depth+1, breaking))
			v.Set(p)
		}
	case reflect.Slice:
		if rng.IntN(8) > 0 && depth < 4 {
			n := rng.IntN(3)
			s := reflect.MakeSlice(typ, n, n)
			for i := range n {
				s.Index(i).Set(randomValue(rng, typ.Elem(), depth+1, breaking))
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range typ.Len() {
			v.Index(i).Set(randomValue(rng, typ.Elem(), depth+1, breaking))
		}
	case reflect.Map:
		if !breaking || rng.IntN(12) > 0 {
			m := reflect.MakeMap(typ)
			for i := range rng.IntN(3) {
				m.SetMapIndex(reflect.ValueOf(string(rune('a'+i))).Convert(typ.Key()), randomValue(rng, typ.Elem(), depth+1, breaking))
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range typ.NumField() {
			if typ.Field(i).IsExported() {
				v.Field(i).Set(randomValue(rng, typ.Field(i).Type, depth+1, breaking))
			}
		}
	}
	return v
}
