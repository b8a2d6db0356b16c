package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// count is the probe section's state: an integer changed by its tools.
var count = session.NewKey[int]("probe.count")

// added is the probe section's event.
type added struct{ n int }

// poisoned is an event whose reducer always fails.
type poisoned struct{}

// release unblocks probe_block calls.
var release = make(chan struct{})

// hear unblocks a probe_deaf call, which nothing else does.
var hear = make(chan struct{})

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
			session.Persist(r, count, session.JSON[int]())
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
			tools.New("probe_deaf", "Add, then wait until heard, whatever the context says, as a handler stuck in a system call does.", ann,
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if err := incr(ctx, p.By); err != nil {
						return tools.Result[counter]{}, err
					}
					<-hear
					return tools.OK("Heard.", current(ctx)), nil
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
			tools.New("probe_aside", "Return a value of the output schema kept out of the context.", tools.Annotations{Title: "Aside", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[counter], error) {
					return tools.Result[counter]{Message: "Kept aside.", Value: counter{Count: 7}, Success: true, ExcludeValueFromContext: true}, nil
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

// client returns a client of the server with the session id id.
func (h *harness) client(id string) *mcptest.Client { return mcptest.NewClient(h.t, h.srv.MCP(), id) }

// session returns the session of client c.
func (h *harness) session(c *mcptest.Client) *session.Session {
	h.t.Helper()
	s, err := h.srv.Sessions().Get(c.SessionID())
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// count returns the probe section's count in the session of client c.
func (h *harness) count(c *mcptest.Client) int {
	h.t.Helper()
	n, _ := session.Get(h.session(c), count)
	return n
}

// calls returns the calls in the log of client c's session, as
// server.LogURI lists them.
func (h *harness) calls(c *mcptest.Client) []session.CallSummary {
	h.t.Helper()
	var log []session.CallSummary
	if err := json.Unmarshal([]byte(readText(h.t, c, server.LogURI, nil)), &log); err != nil {
		h.t.Fatal(err)
	}
	return log
}

// last returns the record of the last call in the log of client c's
// session (as indented by the resource).
func (h *harness) last(c *mcptest.Client) session.ToolInvoked {
	h.t.Helper()
	log := h.calls(c)
	if len(log) == 0 {
		h.t.Fatal("no invocation recorded")
	}
	var ev session.ToolInvoked
	if err := json.Unmarshal([]byte(readText(h.t, c, "wink://session/calls/"+log[len(log)-1].CallID, nil)), &ev); err != nil {
		h.t.Fatal(err)
	}
	return ev
}

// syncWriter is a bytes.Buffer safe for a logger and the test at once.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
