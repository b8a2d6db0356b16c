package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// count is the probe section's state, changed by p_write and p_flaky.
var count = session.NewKey[int]("probe.count")

type added struct{ n int }

type keyParams struct {
	Key string `json:"key,omitempty" jsonschema:"Any key."`
}

type byParams struct {
	By int `json:"by" jsonschema:"How much to add."`
}

type noParams struct{}

// reading is a struct result, so tools returning it have an output schema.
type reading struct {
	Key   string `json:"key" jsonschema:"The key."`
	Count int    `json:"count" jsonschema:"The count."`
	Runs  int64  `json:"runs" jsonschema:"How often the tool ran."`
}

// liar marshals to something its schema does not allow.
type liar struct {
	N int `json:"n" jsonschema:"A number."`
}

func (liar) MarshalJSON() ([]byte, error) { return []byte(`{"n":"not a number"}`), nil }

// owner is embedded in card: encoding/json promotes its fields, and the
// output schema lists them as card's own.
type owner struct {
	Name  string `json:"name" jsonschema:"The owner."`
	Email string `json:"email,omitempty" jsonschema:"The owner's address."`
}

// card is a struct result with an embedded struct.
type card struct {
	owner
	Token string `json:"token" jsonschema:"The card's token."`
	Uses  int    `json:"uses" jsonschema:"How often it was used."`
}

// probe is a section of tools for exercising the stages. Its counters
// say how often each tool's handler ran.
type probe struct {
	runs      atomic.Int64 // p_read
	flaky     atomic.Int64 // p_flaky: attempts so far
	failFirst atomic.Int64 // p_flaky: how many attempts fail
	release   chan struct{}
	started   chan struct{}
	big       int // p_big: bytes of text
}

func newProbe() *probe {
	return &probe{release: make(chan struct{}), started: make(chan struct{}, 100), big: 1000}
}

func (pr *probe) section() *sections.Section {
	current := func(ctx *tools.Context) int { n, _ := session.Get(ctx.Session, count); return n }
	ro := tools.Annotations{Title: "Read", ReadOnly: true, Idempotent: true}
	return &sections.Section{
		Key: "probe", Title: "Probe", Guidance: "Tools for the stages.",
		Setup: func(r *session.Registry) {
			session.Persist(r, count, session.JSON[int]())
			session.On(r, count, func(old int, _ bool, ev added) (int, error) { return old + ev.n, nil })
		},
		Tools: []*tools.Tool{
			tools.New("p_read", "Read the count.", ro,
				func(ctx *tools.Context, p keyParams) (tools.Result[reading], error) {
					return tools.OK("Read.", reading{Key: p.Key, Count: current(ctx), Runs: pr.runs.Add(1)}), nil
				}),
			tools.New("p_read2", "Read the count too.", ro,
				func(ctx *tools.Context, p keyParams) (tools.Result[reading], error) {
					return tools.OK("Read.", reading{Key: p.Key, Count: current(ctx)}), nil
				}),
			tools.New("p_write", "Add to the count.", tools.Annotations{Title: "Write"},
				func(ctx *tools.Context, p byParams) (tools.Result[reading], error) {
					if err := ctx.Dispatch(added{p.By}); err != nil {
						return tools.Result[reading]{}, err
					}
					if p.By < 0 {
						return tools.Fail[reading]("Negative."), nil
					}
					return tools.OK("Added.", reading{Count: current(ctx)}), nil
				}),
			tools.New("p_flaky", "Add one; fail transiently at first.", tools.Annotations{Title: "Flaky", Idempotent: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					if err := ctx.Dispatch(added{1}); err != nil {
						return tools.Result[reading]{}, err
					}
					if pr.flaky.Add(1) <= pr.failFirst.Load() {
						return tools.Result[reading]{}, tools.Transient(errors.New("upstream timed out"))
					}
					return tools.OK("Done.", reading{Count: current(ctx)}), nil
				}),
			tools.New("p_lookup", "Read the count; fail transiently at first.", ro,
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					if pr.flaky.Add(1) <= pr.failFirst.Load() {
						return tools.Result[reading]{}, tools.Transient(errors.New("upstream timed out"))
					}
					return tools.OK("Read.", reading{Count: current(ctx)}), nil
				}),
			tools.New("p_broken", "Fail with a permanent error.", tools.Annotations{Title: "Broken", Idempotent: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					pr.flaky.Add(1)
					return tools.Result[reading]{}, errors.New("no such thing")
				}),
			tools.New("p_once", "Fail transiently, but not idempotent.", tools.Annotations{Title: "Once"},
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					pr.flaky.Add(1)
					return tools.Result[reading]{}, tools.Transient(errors.New("upstream timed out"))
				}),
			tools.New("p_panic", "Add, then panic.", tools.Annotations{Title: "Panic"},
				func(ctx *tools.Context, p byParams) (tools.Result[reading], error) {
					_ = ctx.Dispatch(added{p.By})
					panic("kaboom")
				}),
			tools.New("p_block", "Wait until released or the context ends.", tools.Annotations{Title: "Block"},
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					pr.started <- struct{}{}
					select {
					case <-pr.release:
					case <-ctx.Done():
						return tools.Result[reading]{}, ctx.Err()
					}
					return tools.OK("Released.", reading{}), nil
				}),
			tools.New("p_big", "Return a long text.", tools.Annotations{Title: "Big", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[reading], error) {
					return tools.OK(strings.Repeat("é", pr.big/2), reading{Key: "big"}), nil
				}),
			tools.New("p_secret", "Return secrets.", tools.Annotations{Title: "Secret", ReadOnly: true},
				func(ctx *tools.Context, p keyParams) (tools.Result[reading], error) {
					return tools.OK("Token sk-ABCDEFGHIJKLMNOP issued.", reading{Key: "sk-QRSTUVWXYZABCDEF"}), nil
				}),
			tools.New("p_liar", "Return a result its schema forbids.", tools.Annotations{Title: "Liar"},
				func(ctx *tools.Context, _ noParams) (tools.Result[liar], error) {
					if err := ctx.Dispatch(added{1}); err != nil {
						return tools.Result[liar]{}, err
					}
					return tools.OK("Lied.", liar{N: 1}), nil
				}),
			tools.New("p_embed", "Return a struct with an embedded one.", tools.Annotations{Title: "Embed", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[card], error) {
					return tools.OK("Issued.", card{owner: owner{Name: "sk-ABCDEFGHIJKLMNOP", Email: "a@example.com"}, Token: "t", Uses: 2}), nil
				}),
			tools.New("p_text", "Return text only.", tools.Annotations{Title: "Text", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[string], error) {
					return tools.OK("Plain.", "text"), nil
				}),
		},
	}
}

// harness is a server with the hooks of one Config.
type harness struct {
	t     testing.TB
	probe *probe
	hooks *Hooks
	srv   *server.Server
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// logged returns what was logged.
func (h *harness) logged() string { return h.logs.String() }

// options tweak a harness.
type options struct {
	extra    map[tools.Slot][]tools.Middleware
	policies []policy.Policy
	deadline time.Duration
}

func newHarness(t testing.TB, cfg Config, opts ...func(*options)) *harness {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	pr := newProbe()
	tree, err := sections.NewTree(pr.section())
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	h, err := New(cfg, tree.Tools())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	stages := h.Stages()
	for slot, mws := range o.extra {
		stages[slot] = append(stages[slot], mws...)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Deadline: o.deadline,
		Stages: stages, ToolFilter: h.Visible, Policies: o.policies,
		Logger: cfg.Logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, probe: pr, hooks: h, srv: srv, logs: logs}
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

// invocations returns the records of the calls in the log of client c's
// session, read as a client reads them: the log's list, then each call's
// record (whose arguments are compacted again).
func (h *harness) invocations(c *mcptest.Client) []session.ToolInvoked {
	h.t.Helper()
	var log []session.CallSummary
	h.read(c, server.LogURI, &log)
	out := make([]session.ToolInvoked, len(log))
	for i, sum := range log {
		h.read(c, "wink://session/calls/"+sum.CallID, &out[i])
		var args bytes.Buffer
		if err := json.Compact(&args, out[i].Args); err != nil {
			h.t.Fatal(err)
		}
		out[i].Args = args.Bytes()
	}
	return out
}

// read decodes the JSON text of the resource uri, read by client c.
func (h *harness) read(c *mcptest.Client, uri string, v any) {
	h.t.Helper()
	raw, rpcErr := c.Send(context.Background(), "resources/read", map[string]any{"uri": uri})
	if rpcErr != nil {
		h.t.Fatalf("%s: %+v", uri, rpcErr)
	}
	var res struct{ Contents []struct{ Text string } }
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) != 1 {
		h.t.Fatalf("%s: %s", uri, raw)
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), v); err != nil {
		h.t.Fatalf("%s: %v", uri, err)
	}
}

// last returns the last invocation recorded in the session of client c.
func (h *harness) last(c *mcptest.Client) session.ToolInvoked {
	h.t.Helper()
	log := h.invocations(c)
	if len(log) == 0 {
		h.t.Fatal("no invocation recorded")
	}
	return log[len(log)-1]
}

// as returns a context carrying the identity.
func as(subject string, scopes ...string) context.Context {
	return identity.With(context.Background(), identity.Identity{Subject: subject, Scopes: scopes})
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func ptr[T any](v T) *T { return &v }

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
