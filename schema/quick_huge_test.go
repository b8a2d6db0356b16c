package schema

import "testing"

// TestFastPathLeavesHugeNumbers pins that the fast path never accepts a
// number math/big cannot hold, so that both paths refuse it alike.
func TestFastPathLeavesHugeNumbers(t *testing.T) {
	v, err := Compile([]byte(`{"type":"object","properties":{"n":{"type":"number"},"any":{}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if v.quick == nil {
		t.Fatal("no fast path for an inferred-style schema")
	}
	for _, doc := range []string{`{"n":1e1000010}`, `{"any":[1e1000010]}`} {
		if err := v.ValidateJSON([]byte(doc)); err == nil {
			t.Errorf("%s accepted", doc)
		}
	}
	if err := v.ValidateJSON([]byte(`{"n":1.5e3,"any":{"x":[1,"y"]}}`)); err != nil {
		t.Errorf("valid document refused: %v", err)
	}
}
