package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/store"
)

// TestHandleMessage: what mcp-go answers otherwise is answered as MCP
// says: a number beyond float64 in a call's arguments or _meta is an
// isError result of the pipeline's validation, naming the argument or key; a resource that does not exist is -32002, or -32602 for a
// request of revision 2026-07-28, whether a template's handler says so or
// no handler matches. Anything else passes through unchanged.
func TestHandleMessage(t *testing.T) {
	srv := newReplica(t, store.NewMemory(store.Options{}), countingSection(false, nil), nil)
	meta, err := json.Marshal(modern(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, msg string
		code      int    // of the JSON-RPC error, or 0
		text      string // of the isError result, when code is 0
	}{
		{"number beyond float64", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":{"by":1e309}}}`,
			0, "Invalid arguments: /by: integer out of range"},
		{"number beyond float64 in _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":{"by":1},"_meta":{"io.github.wink-mcp/timeoutMs":1e999,"other":1}}}`,
			0, "Invalid _meta: io.github.wink-mcp/timeoutMs: expected a number of milliseconds from 0 to 9223372036854, got 1e999"},
		{"both", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":{"by":1e309},"_meta":{"progressToken":-1e999}}}`,
			0, "Invalid arguments: /by: integer out of range"},
		{"both, _meta first", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":-1e999},"name":"tally_add","arguments":{"by":1e309}}}`,
			0, "Invalid arguments: /by: integer out of range"},
		{"arguments not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":[1e309]}}`,
			0, "Invalid arguments: (root): expected object, got array"},
		{"valid call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":{"by":1}}}`,
			0, ""},
		{"broken params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`, mcp.INVALID_REQUEST, ""},
		{"call not found", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"wink://session/calls/00"}}`,
			mcp.RESOURCE_NOT_FOUND, ""},
		{"no handler", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"wink://nope"}}`,
			mcp.RESOURCE_NOT_FOUND, ""},
		{"call not found, 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"wink://session/calls/00","_meta":` + string(meta) + `}}`,
			mcp.INVALID_PARAMS, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(server.HandleMessage(context.Background(), srv.MCP(), json.RawMessage(tc.msg)))
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
				Result *struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &resp); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.code != 0:
				if resp.Error == nil || resp.Error.Code != tc.code {
					t.Errorf("got %s, want the error %d", b, tc.code)
				}
			case resp.Result == nil || len(resp.Result.Content) == 0:
				t.Errorf("got %s, want a result", b)
			case tc.text == "" && resp.Result.IsError, tc.text != "" && (!resp.Result.IsError || resp.Result.Content[0].Text != tc.text):
				t.Errorf("got %s, want %q", b, tc.text)
			}
		})
	}
}

// TestCancelledBeforeItsSession: a call cancelled while its session is
// being started, or before, is answered as cancelled, not as a failure of
// the session store.
func TestCancelledBeforeItsSession(t *testing.T) {
	srv := newReplica(t, store.NewMemory(store.Options{}), countingSection(false, nil), nil)
	meta, err := json.Marshal(modern(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tally_add","arguments":{"by":1},"_meta":` + string(meta) + `}}`
	b, err := json.Marshal(server.HandleMessage(ctx, srv.MCP(), json.RawMessage(msg)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"text":"Tool 'tally_add' was cancelled."`) || !strings.Contains(string(b), `"isError":true`) {
		t.Errorf("got %s", b)
	}
}
