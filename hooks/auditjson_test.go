package hooks

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// TestAppendRecordMatchesMarshal: the hand-written encoding of a record
// decodes to what json.Marshal's does, and the strings come out the same.
func TestAppendRecordMatchesMarshal(t *testing.T) {
	tricky := "quote \" backslash \\ newline \n tab \t cr \r bell \a nul \x00 bad \xff utf8 é 日本 \u2028 \u2029 <html>&"
	recs := []AuditRecord{
		{},
		{
			Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Session: "s", Subject: tricky, Scopes: []string{"a", tricky},
			ToolInvoked: session.ToolInvoked{
				CallID: "c1", Tool: "t", Args: json.RawMessage("{\n  \"a\": [1, 2]\n}"), Success: true,
				Message: tricky, Text: tricky, Value: map[string]any{"k": tricky, "n": 1.5},
				Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Duration: 1234,
				ErrorClass: "failure", Cached: true, Retries: 2,
			},
			Error: tricky,
		},
		{ToolInvoked: session.ToolInvoked{Args: json.RawMessage(`{not json`), Value: []int(nil)}},
	}
	for i, rec := range recs {
		forMarshal := rec
		if i == 2 {
			forMarshal.Args = nil // json.Marshal refuses arguments that are not JSON
		}
		want, err := json.Marshal(&forMarshal)
		if err != nil {
			t.Fatal(err)
		}
		value, _ := json.Marshal(rec.Value)
		got := appendRecord(nil, &rec, value)
		var g, w map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// Arguments that are not JSON are kept as a string.
			if g["arguments"] != "{not json" {
				t.Errorf("arguments %v", g["arguments"])
			}
			delete(g, "arguments")
			delete(w, "arguments")
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want)
		}
		for _, c := range got {
			if c == '\n' {
				t.Errorf("record %d spans lines: %s", i, got)
			}
		}
	}
	if got, want := string(appendString(nil, tricky)), mustMarshalNoHTML(t, tricky); got != want {
		t.Errorf("appendString:\n got %s\nwant %s", got, want)
	}
}

func mustMarshalNoHTML(t *testing.T, s string) string {
	b, err := marshalPlain(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
