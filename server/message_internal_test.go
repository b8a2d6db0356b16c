package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestWithoutArguments: the arguments of a tools/call, wherever they stand
// and however spaced, are taken out whole and {} is left in their place,
// the rest of the message as it was; anything else is left alone.
// ParseMessage finds them in the one decoding of the message.
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
		{"params not an object, method after", `{"jsonrpc":"2.0","id":1,"params":"arguments","method":"tools/call"}`, "", ""},
		{"not JSON", `{"method":"tools/call","params":{"arguments":{}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slim, args json.RawMessage
			m, err := ParseMessage(json.RawMessage(tc.msg))
			ok := err == nil
			if ok {
				slim, args, ok = withoutArguments(m)
			}
			if ok != (tc.slim != "") || string(slim) != tc.slim || string(args) != tc.args {
				t.Errorf("withoutArguments = %q, %q, %v; want %q, %q", slim, args, ok, tc.slim, tc.args)
			}
		})
	}
}

// TestParseMessage: the id and method of a message, and the errors a
// transport answers: not JSON, or a method that is not a string, whatever
// the params hold.
func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		id        string // as sent, "" when absent
		method    string
		hasID     bool
		err       string // "syntax", "type" or ""
	}{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "7", "ping", true, ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized", false, ""},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", "ping", false, ""},
		{"response", `{"jsonrpc":"2.0","id":"a","result":{}}`, `"a"`, "", true, ""},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, "1", "tools/call", true, ""},
		{"method a number", `{"jsonrpc":"2.0","id":1,"method":5}`, "", "", false, "type"},
		{"method a number after bad params", `{"jsonrpc":"2.0","id":1,"params":[],"method":5}`, "", "", false, "type"},
		{"not JSON", `{"jsonrpc":"2.0",`, "", "", false, "syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMessage(json.RawMessage(tc.msg))
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			got := ""
			switch {
			case errors.As(err, &se):
				got = "syntax"
			case errors.As(err, &te):
				got = "type"
			case err != nil:
				got = err.Error()
			}
			if got != tc.err || string(m.ID) != tc.id || m.Method != tc.method || m.HasID() != tc.hasID {
				t.Errorf("ParseMessage = %q %q %v, %v; want %q %q %v, %s", m.ID, m.Method, m.HasID(), err, tc.id, tc.method, tc.hasID, tc.err)
			}
		})
	}
}

// FuzzParseMessage: whatever a transport reads, ParseMessage either fails
// as json.Unmarshal would or decodes it; the arguments it finds, put back
// in place of the {} left for mcp-go, give the message as read, and both
// the arguments and what mcp-go is given are JSON.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,2]}}}`,
		"{ \"params\" : { \"arguments\" :\n\t\"x\" , \"_meta\": {\"arguments\": 1} }, \"id\": \"a\", \"method\": \"tools/call\" }",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{"ttl":5},"arguments":null}}`,
		`{"jsonrpc":"2.0","id":1,"params":[],"method":5}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParseMessage(msg)
		if (err != nil) != (json.Unmarshal(msg, new(any)) != nil) && !errors.As(err, new(*json.UnmarshalTypeError)) {
			t.Fatalf("ParseMessage(%q): %v", msg, err)
		}
		if err != nil {
			return
		}
		slim, args, ok := withoutArguments(m)
		if !ok {
			return
		}
		if !json.Valid(slim) || !json.Valid(args) {
			t.Fatalf("%q: slim %q, arguments %q", msg, slim, args)
		}
		if !putBack(slim, args, msg) {
			t.Fatalf("%q: the arguments %q put back in %q do not give it", msg, args, slim)
		}
	})
}

// putBack reports whether args, put in place of one of the {} of slim,
// gives msg.
func putBack(slim, args, msg []byte) bool {
	for i := range slim {
		if bytes.HasPrefix(slim[i:], []byte("{}")) && bytes.Equal(slices.Concat(slim[:i], args, slim[i+2:]), msg) {
			return true
		}
	}
	return false
}

// withoutArguments is m with {} in place of its arguments, as Handle
// gives it to mcp-go, and the arguments.
func withoutArguments(m Message) (json.RawMessage, json.RawMessage, bool) {
	slim, ok := m.rewrite(edit{m.call.Arguments, []byte("{}")})
	return slim, json.RawMessage(m.call.Arguments), ok
}
