package schema_test

import (
	"testing"

	"github.com/wink-mcp/wink-mcp/schema"
)

func TestNotText(t *testing.T) {
	for _, tc := range []struct {
		name, raw, ptr string
		bad            bool
	}{
		{name: "plain", raw: `{"a":"héllo","b":["x"]}`},
		{name: "escaped pair", raw: `{"a":"\ud83d\ude00"}`},
		{name: "other escapes", raw: `{"a":"\\u00e9 \" \n \u00e9"}`},
		{name: "invalid byte", raw: "{\"a\":\"ok\",\"b\":\"x\xffy\"}", ptr: "/b", bad: true},
		{name: "lone high", raw: `{"a":"x\ud800y"}`, ptr: "/a", bad: true},
		{name: "lone low", raw: `{"a":"\udc00"}`, ptr: "/a", bad: true},
		{name: "high then not low", raw: `{"a":"\ud800\u0041"}`, ptr: "/a", bad: true},
		{name: "high at end", raw: `{"a":"\ud800"}`, ptr: "/a", bad: true},
		{name: "nested", raw: "{\"edits\":[{\"old\":\"a\"},{\"old\":\"\xc3\"}]}", ptr: "/edits/1/old", bad: true},
		{name: "key escaped", raw: "{\"a/b\":\"\xfe\"}", ptr: "/a~1b", bad: true},
		{name: "root string", raw: "\"\xfe\"", ptr: "", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ptr, bad := schema.NotText([]byte(tc.raw))
			if ptr != tc.ptr || bad != tc.bad {
				t.Errorf("NotText(%q) = %q, %v; want %q, %v", tc.raw, ptr, bad, tc.ptr, tc.bad)
			}
		})
	}
}

func TestValidateJSONRefusesNonText(t *testing.T) {
	v := mustCompile(t, testSchema)
	err := v.ValidateJSON([]byte("{\"step_id\":1,\"title\":\"\xff\"}"))
	if err == nil || err.Error() != "/title: not text: invalid UTF-8 or a lone surrogate" {
		t.Fatalf("got %v", err)
	}
}
