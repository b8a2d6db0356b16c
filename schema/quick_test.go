package schema

import (
	"encoding/json"
	"testing"
)

// TestQuickSchemaAgrees checks the fast path against the full validator:
// whatever the fast path accepts, the full validator accepts, and on these
// documents the two agree.
func TestQuickSchemaAgrees(t *testing.T) {
	schemas := map[string]string{
		"object": `{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
			"a":{"type":"integer","description":"x"},
			"b":{"type":["null","array"],"items":{"type":"string","enum":["x","y"]}},
			"c":{"type":"object","additionalProperties":{"type":"number"}},
			"d":{},
			"e":{"type":"boolean"}}}`,
		"open":    `{"type":"object","properties":{"a":{"type":"string"}}}`,
		"enums":   `{"enum":[1,"two",true,null]}`,
		"untyped": `{"properties":{"a":{"type":"integer"}},"required":["a"]}`,
	}
	docs := []string{
		`{"a":1,"b":["x","y"]}`, `{"a":1,"b":null}`, `{"a":1.0,"b":null}`, `{"a":1e2,"b":[]}`, `{"a":1.5,"b":null}`,
		`{"a":"1","b":null}`, `{"a":1}`, `{"b":null}`, `{"a":1,"b":["z"]}`, `{"a":1,"b":null,"f":1}`,
		`{"a":1,"b":null,"c":{"k":1.5,"j":-2}}`, `{"a":1,"b":null,"c":{"k":"no"}}`, `{"a":1,"b":null,"d":{"any":[1,{"x":null}]}}`,
		`{"a":1,"b":null,"e":false}`, `{"a":1,"b":null,"e":"false"}`, `{"a":1,"b":[],"e":null}`, `{"a":1,"b":true}`, `{"a":1,"a":2}`, `{"a":1,"b":null,"b":null}`,
		`{"a":1,"b":["x\u0079"]}`, `{"\u0061":1,"b":null}`, `{"a":1,"b":["y"]} `, `{"a":1,"b":["y"]}x`, `[1,2]`, `"str"`, `1`, `"two"`,
		`true`, `null`, `false`, `{}`, `{"a":"s"}`, `{"a":2}`, `{"a":-0}`, `{"a":1,"b":[null]}`, `{"a":[],"b":null}`,
		` { "a" : 1 , "b" : [ "x" ] } `,
	}
	for name, src := range schemas {
		full, err := compileFull([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		q, ok := compileQuick([]byte(src))
		if !ok {
			t.Fatalf("%s: not compiled", name)
		}
		for _, doc := range docs {
			val, err := Decode([]byte(doc))
			fullOK := err == nil && full.Validate(val) == nil
			if q.validJSON([]byte(doc)) && !fullOK {
				t.Errorf("%s: the fast path accepts %s, the full validator does not", name, doc)
			}
			if err == nil && q.valid(val) != fullOK {
				t.Errorf("%s: valid(%s) = %v, full validator %v", name, doc, !fullOK, fullOK)
			}
		}
	}
	// Schemas outside the subset are not compiled.
	for _, src := range []string{`{"minimum":1}`, `{"$ref":"#/$defs/x"}`, `{"oneOf":[{}]}`, `false`, `{"enum":[[1]]}`} {
		if _, ok := compileQuick([]byte(src)); ok {
			t.Errorf("compiled %s", src)
		}
	}
	// Schemas as tools.New infers them are in the subset.
	inferred := `{"type":"object","properties":{"objective":{"type":"string","description":"What the plan is for."},"status":{"type":"string","description":"Its status.","enum":["active","completed"]},"steps":{"type":["null","array"],"items":{"type":"object","properties":{"step_id":{"type":"integer","description":"ID."},"title":{"type":"string","description":"Title."}},"required":["step_id","title"],"additionalProperties":false},"description":"The steps."}},"required":["objective","status","steps"],"additionalProperties":false}`
	if _, ok := compileQuick([]byte(inferred)); !ok {
		t.Error("an inferred schema was not compiled")
	}
}

// FuzzQuickSchema: whatever document the fast path accepts, the full
// validator accepts.
func FuzzQuickSchema(f *testing.F) {
	const src = `{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
		"a":{"type":"integer"},
		"b":{"type":["null","array"],"items":{"type":"string","enum":["x","y"]}},
		"c":{"type":"object","additionalProperties":{"type":"number"}},
		"d":{},
		"e":{"type":["boolean","null"],"enum":[true,null]}}}`
	full, err := compileFull([]byte(src))
	if err != nil {
		f.Fatal(err)
	}
	q, ok := compileQuick([]byte(src))
	if !ok {
		f.Fatal("not compiled")
	}
	for _, seed := range []string{`{"a":1,"b":["x"]}`, `{"a":1.0,"b":null,"e":true}`, `{"a":1,"b":null,"c":{"k":2}}`, `{"a":1,"a":1}`, `{"a":1,"b":["\u0078"]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		// The fast path is given what the encoder wrote: valid JSON.
		if !json.Valid(doc) || !q.validJSON(doc) {
			return
		}
		val, err := Decode(doc)
		if err != nil {
			t.Fatalf("accepted %q, which is not JSON: %v", doc, err)
		}
		if err := full.Validate(val); err != nil {
			t.Fatalf("accepted %q: %v", doc, err)
		}
	})
}
