package schema

import "testing"

// TestCompileDeferred: a deferred validator accepts and refuses what an
// eager one does, with the same explanations, and compiles the full
// validator only when the fast path does not accept; a schema the fast
// path does not cover is compiled, and its errors reported, at once.
func TestCompileDeferred(t *testing.T) {
	const src = `{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer","description":"A number."},"tags":{"type":["null","array"],"items":{"type":"string","enum":["a","b"]}}}}`
	eager, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := CompileDeferred([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"n":1}`, `{"n":1,"tags":["a"]}`, `{"n":1,"tags":null}`} {
		if err := lazy.ValidateJSON([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	if lazy.full != nil {
		t.Error("the full validator was compiled for values the fast path accepts")
	}
	for _, doc := range []string{`{}`, `{"n":"1"}`, `{"n":1,"x":2}`, `{"n":1,"tags":["c"]}`, `[1]`, `{"n":1e1000010}`} {
		want, got := eager.ValidateJSON([]byte(doc)), lazy.ValidateJSON([]byte(doc))
		if want == nil || got == nil || want.Error() != got.Error() {
			t.Errorf("%s: deferred says %v, eager says %v", doc, got, want)
		}
	}
	if lazy.full == nil {
		t.Error("the full validator was not compiled to explain a refusal")
	}
	// Outside the fast path's keywords: compiled, and refused, at once.
	if _, err := CompileDeferred([]byte(`{"type":"object","minProperties":"x"}`)); err == nil {
		t.Error("a bad schema outside the fast path compiled")
	}
	v, err := CompileDeferred([]byte(`{"type":"string","pattern":"^a"}`))
	if err != nil || v.full == nil {
		t.Errorf("a schema outside the fast path: err %v, compiled %v", err, v != nil && v.full != nil)
	}
}
