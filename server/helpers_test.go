package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// clientSession is a minimal mcp-go client session for driving the server
// in-process through HandleMessage.
type clientSession struct {
	id    string
	ch    chan mcp.JSONRPCNotification
	ready atomic.Bool
	level atomic.Value
}

func newClientSession(id string) *clientSession {
	return &clientSession{id: id, ch: make(chan mcp.JSONRPCNotification, 1024)}
}

func (c *clientSession) Initialize()                                         { c.ready.Store(true) }
func (c *clientSession) Initialized() bool                                   { return c.ready.Load() }
func (c *clientSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.ch }
func (c *clientSession) SessionID() string                                   { return c.id }
func (c *clientSession) SetLogLevel(l mcp.LoggingLevel)                      { c.level.Store(l) }
func (c *clientSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := c.level.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

// count is the probe section's state: an integer changed by its tools.
var count = session.NewKey[int]("probe.count")

// added is the probe section's event.
type added struct{ n int }

// poisoned is an event whose reducer always fails.
type poisoned struct{}

// release unblocks probe_block calls.
var release = make(chan struct{})

type byParams struct {
	By int `json:"by" jsonschema:"How much to add."`
}

type noParams struct{}

// counter is a struct result, so tools returning it get an output schema.
type counter struct {
	Count int `json:"count" jsonschema:"The count."`
}

// probeSection is a section whose tools exercise every row of the failure
// table: each changes the count first, then fails in its own way.
func probeSection() *sections.Section {
	ann := tools.Annotations{Title: "Probe"}
	incr := func(ctx *tools.Context, by int) error { return ctx.Dispatch(added{by}) }
	current := func(ctx *tools.Context) counter {
		n, _ := session.Get(ctx.Session, count)
		return counter{n}
	}
	return &sections.Section{
		Key:      "probe",
		Title:    "Probe",
		Guidance: "Tools that fail on purpose.",
		Setup: func(r *session.Registry) {
			session.On(r, count, func(old int, _ bool, ev added) (int, error) { return old + ev.n, nil })
			session.On(r, count, func(int, bool, poisoned) (int, error) { return 0, errors.New("poisoned") })
		},
		Tools: []*tools.Tool{
			tools.New("probe_get", "Return the count.", tools.Annotations{Title: "Get", ReadOnly: true, Idempotent: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[counter], error) {
					return tools.OK("Count.", current(ctx)), nil
				}),
			tools.New("probe_add", "Add to the count.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					return tools.OK(fmt.Sprintf("Added %d.", p.By), current(ctx)), nil
				}),
			tools.New("probe_fail", "Add, then return a failure result.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					return tools.Fail[counter]("Nothing doing."), nil
				}),
			tools.New("probe_error", "Add, then return a Go error.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					return tools.Result[counter]{}, errors.New("boom")
				}),
			tools.New("probe_panic", "Add, then panic.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					panic("kaboom")
				}),
			tools.New("probe_poison", "Add, then dispatch an event whose reducer fails.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					if err := ctx.Dispatch(poisoned{}); err != nil {
						return tools.Result[counter]{}, err
					}
					return tools.OK("Unreachable.", current(ctx)), nil
				}),
			tools.New("probe_block", "Add, then wait until released or the context ends.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					select {
					case <-release:
					case <-ctx.Done():
					}
					return tools.OK("Released.", current(ctx)), nil
				}),
			tools.New("probe_stop", "Add, wait for the deadline, then say where it stopped.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					<-ctx.Done()
					return tools.Fail[counter]("Stopped before step 2."), nil
				}),
			tools.New("probe_notify", "Send progress and a log message, then succeed.", ann,
				func(ctx *tools.Context, _ noParams) (tools.Result[counter], error) {
					for i := range 3 {
						if err := ctx.Progress(float64(i+1), 3, "step"); err != nil {
							return tools.Result[counter]{}, err
						}
					}
					_ = ctx.Log("info", "hello")
					return tools.OK("Notified.", current(ctx)), nil
				}),
			tools.New("probe_secret", "Return a value kept out of the context.", tools.Annotations{Title: "Secret", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[[]string], error) {
					return tools.Result[[]string]{Message: "Kept aside.", Value: []string{"big", "value"}, Success: true, ExcludeValueFromContext: true}, nil
				}),
		},
	}
}

// failingPolicy lets every call through and fails every OnResult.
type failingPolicy struct{}

func (failingPolicy) Name() string            { return "failing" }
func (failingPolicy) Check(*tools.Call) error { return nil }
func (failingPolicy) OnResult(c *tools.Call, _ *tools.Outcome) error {
	if c.Tool.Name() == "probe_add" {
		var p byParams
		if p = c.Params.(byParams); p.By == -13 {
			return errors.New("unlucky")
		}
	}
	return nil
}

type harness struct {
	t   testing.TB
	srv *server.Server
}

func newHarness(t testing.TB, deadline time.Duration, policies ...policy.Policy) *harness {
	t.Helper()
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Deadline: deadline,
		Policies: append([]policy.Policy{failingPolicy{}}, policies...),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv}
}

// response is a JSON-RPC response, decoded loosely.
type response struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toolResult is a tools/call result.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		URI  string `json:"uri"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func (h *harness) send(ctx context.Context, cs *clientSession, msg map[string]any) response {
	h.t.Helper()
	msg["jsonrpc"] = "2.0"
	raw, err := json.Marshal(msg)
	if err != nil {
		h.t.Fatal(err)
	}
	out := h.srv.MCP().HandleMessage(h.srv.MCP().WithContext(ctx, cs), raw)
	b, err := json.Marshal(out)
	if err != nil {
		h.t.Fatal(err)
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

var nextID atomic.Int64

func (h *harness) call(ctx context.Context, cs *clientSession, name string, args any, meta map[string]any) (toolResult, response) {
	h.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	r := h.send(ctx, cs, map[string]any{"id": nextID.Add(1), "method": "tools/call", "params": params})
	var tr toolResult
	if r.Error == nil {
		if err := json.Unmarshal(r.Result, &tr); err != nil {
			h.t.Fatal(err)
		}
	}
	return tr, r
}

func (h *harness) count(cs *clientSession) int {
	h.t.Helper()
	s, err := h.srv.Sessions().Get(cs.id)
	if err != nil {
		h.t.Fatal(err)
	}
	n, _ := session.Get(s, count)
	return n
}

func text(tr toolResult) string {
	var b strings.Builder
	for _, c := range tr.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

var _ mcpserver.ClientSession = (*clientSession)(nil)
