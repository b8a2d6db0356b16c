package server

import (
	"encoding/json"
	"testing"
)

// TestWithoutArguments: the arguments of a tools/call, wherever they stand
// and however spaced, are taken out whole and {} is left in their place,
// the rest of the message as it was; anything else is left alone.
func TestWithoutArguments(t *testing.T) {
	for _, tc := range []struct {
		name, msg  string
		slim, args string // "" when the message is left alone
	}{
		{"call",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,2]}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`, `{"a":[1,2]}`},
		{"method last, blanks, _meta after",
			"{ \"params\" : { \"arguments\" :\n\t{\"path\": \"x\"} , \"_meta\": {\"arguments\": 1} }, \"id\": \"a\", \"method\": \"tools/call\" }",
			"{ \"params\" : { \"arguments\" :\n\t{} , \"_meta\": {\"arguments\": 1} }, \"id\": \"a\", \"method\": \"tools/call\" }", `{"path": "x"}`},
		{"the same value earlier",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"x":"s"},"name":"s","arguments":"s"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"x":"s"},"name":"s","arguments":{}}}`, `"s"`},
		{"null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`, `null`},
		{"a number beyond float64", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"by":1e999}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`, `{"by":1e999}`},
		{"no arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`, "", ""},
		{"arguments in _meta only", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"arguments":{}}}}`, "", ""},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}`, "", ""},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["arguments"]}`, "", ""},
		{"not JSON", `{"method":"tools/call","params":{"arguments":{}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slim, args, ok := withoutArguments(json.RawMessage(tc.msg))
			if ok != (tc.slim != "") || string(slim) != tc.slim || string(args) != tc.args {
				t.Errorf("withoutArguments = %q, %q, %v; want %q, %q", slim, args, ok, tc.slim, tc.args)
			}
		})
	}
}
