package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// askSection's tool adds 1 to the probe count, then asks the user two
// questions, one at a time, and says the answers and the count.
func askSection() *sections.Section {
	ask := func(ctx *tools.Context, q string) (string, error) {
		res, err := ctx.Elicit(mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message: q, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			return "", err
		}
		m, _ := res.Content.(map[string]any)
		v, _ := m["v"].(string)
		return string(res.Action) + ":" + v, nil
	}
	sec := probeSection()
	sec.Tools = append(sec.Tools, tools.New("probe_ask", "Add 1, then ask two questions.", tools.Annotations{Title: "Ask"},
		func(ctx *tools.Context, p struct {
			Topic string `json:"topic" jsonschema:"What to ask about."`
		}) (tools.Result[any], error) {
			if err := ctx.Dispatch(added{1}); err != nil {
				return tools.Result[any]{}, err
			}
			a, err := ask(ctx, "first "+p.Topic+"?")
			if err != nil {
				return tools.Result[any]{}, err
			}
			b, err := ask(ctx, "second "+p.Topic+"?")
			if err != nil {
				return tools.Fail[any]("asking failed: " + err.Error()), nil
			}
			n, _ := session.Get(ctx.Session, count)
			return tools.OK[any](a+" "+b+" count="+strings.Repeat("I", n), nil), nil
		}),
		tools.New("probe_heedless", "Add 1, ask the model, and succeed whatever it said.", tools.Annotations{Title: "Heedless"},
			func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
				if err := ctx.Dispatch(added{1}); err != nil {
					return tools.Result[any]{}, err
				}
				res, err := ctx.CreateMessage(mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
					Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hello?")}}, MaxTokens: 10,
				}})
				said := "nothing"
				if err == nil {
					said = res.Content.(mcp.TextContent).Text
				}
				n, _ := session.Get(ctx.Session, count)
				return tools.OK[any](fmt.Sprintf("The model said %s; count=%d.", said, n), nil), nil
			}))
	return sec
}

// mrtrResult is a tools/call result of the 2026-07-28 era.
type mrtrResult struct {
	mcptest.Result
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

func callModern(t *testing.T, c *mcptest.Client, params map[string]any) mrtrResult {
	t.Helper()
	raw, rpcErr := c.Send(context.Background(), "tools/call", params)
	if rpcErr != nil {
		t.Fatalf("JSON-RPC error %d %s", rpcErr.Code, rpcErr.Message)
	}
	var r mrtrResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInputRequired: a handler's Elicit, for a client of the 2026-07-28
// era, answers input_required with the question and a requestState; the
// client retries with the answer and the state, and the call runs again
// from the start, its earlier questions answered, until it completes.
// Only the last run commits: the count is 1. A state that was tampered
// with, belongs to other arguments, has expired or comes without its
// answer is refused; a client without the elicitation capability is not
// asked. A handler that succeeds after its question went unanswered is
// rolled back all the same.
func TestInputRequired(t *testing.T) {
	tree, err := sections.NewTree(askSection())
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	srv, err := server.New(server.Options{Name: "t", Version: "1", Tree: tree, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := mcptest.NewClient(t, srv.MCP(), "")
	meta := modern(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}})
	call := map[string]any{"name": "probe_ask", "arguments": map[string]any{"topic": "x"}, "_meta": meta}
	retry := func(state string, answers map[string]any) map[string]any {
		r := map[string]any{"requestState": state, "inputResponses": answers}
		for k, v := range call {
			r[k] = v
		}
		return r
	}
	answer := func(v string) map[string]any {
		return map[string]any{"action": "accept", "content": map[string]any{"v": v}}
	}

	r1 := callModern(t, c, call)
	if r1.ResultType != "input_required" || r1.InputRequests["wink-1"].Method != "elicitation/create" ||
		r1.InputRequests["wink-1"].Params.Message != "first x?" || r1.RequestState == "" || r1.IsError {
		t.Fatalf("first round: %+v", r1)
	}
	r2 := callModern(t, c, retry(r1.RequestState, map[string]any{"wink-1": answer("a")}))
	if r2.ResultType != "input_required" || r2.InputRequests["wink-2"].Params.Message != "second x?" || len(r2.InputRequests) != 1 {
		t.Fatalf("second round: %+v", r2)
	}
	r3 := callModern(t, c, retry(r2.RequestState, map[string]any{"wink-2": answer("b")}))
	if r3.ResultType != "complete" || r3.IsError || r3.Said() != "accept:a accept:b count=I" {
		t.Fatalf("last round: %+v %q", r3, r3.Said())
	}

	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"tampered", retry(r2.RequestState[:len(r2.RequestState)-2]+"AA", map[string]any{"wink-2": answer("b")}), "invalid requestState: this server did not issue it"},
		{"other arguments", func() map[string]any {
			p := retry(r2.RequestState, map[string]any{"wink-2": answer("b")})
			p["arguments"] = map[string]any{"topic": "y"}
			return p
		}(), "invalid requestState: it belongs to another call"},
		{"no answer", retry(r2.RequestState, map[string]any{"wink-1": answer("b")}), `invalid requestState: inputResponses has no answer to "wink-2"`},
		{"answers without state", retry("", map[string]any{"wink-1": answer("a")}), "invalid requestState: inputResponses came without the requestState"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callModern(t, c, tc.params)
			if !r.IsError || !strings.HasPrefix(r.Text(), tc.want) {
				t.Errorf("%+v", r)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		clk.advance(16 * time.Minute)
		r := callModern(t, c, retry(r2.RequestState, map[string]any{"wink-2": answer("b")}))
		if !r.IsError || !strings.HasPrefix(r.Text(), "invalid requestState: it expired at ") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("sampling, the error ignored", func(t *testing.T) {
		meta := modern(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"sampling": map[string]any{}}})
		h := r3.Session() // count 1
		if h == "" {
			t.Fatalf("no session in %+v", r3)
		}
		call := map[string]any{"name": "probe_heedless", "arguments": map[string]any{"session": h}, "_meta": meta}
		r := callModern(t, c, call)
		if r.ResultType != "input_required" || r.InputRequests["wink-1"].Method != "sampling/createMessage" || r.IsError {
			t.Fatalf("first round: %+v", r)
		}
		call["requestState"] = r.RequestState
		call["inputResponses"] = map[string]any{"wink-1": map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "hi"}}}
		r = callModern(t, c, call)
		if r.ResultType != "complete" || r.IsError || r.Said() != "The model said hi; count=2." {
			t.Errorf("retried: %+v %q", r, r.Said())
		}
	})
	t.Run("no capability", func(t *testing.T) {
		r := callModern(t, c, map[string]any{"name": "probe_ask", "arguments": map[string]any{"topic": "x"}, "_meta": modern(nil)})
		if r.ResultType != "complete" || !r.IsError || !strings.Contains(r.Text(), "did not declare the elicitation capability") {
			t.Errorf("%+v", r)
		}
	})
}
