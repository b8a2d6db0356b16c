package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestFilterMatches(t *testing.T) {
	tree := probeTools(t)
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"every tool", Filter{}, nil},
		{"glob", Filter{Tools: []string{"p_read*"}}, []string{"p_read", "p_read2"}},
		{"globs add up", Filter{Tools: []string{"p_read", "p_w*"}}, []string{"p_read", "p_write"}},
		{"annotation", Filter{Annotations: []Annotation{Idempotent}}, []string{"p_read", "p_read2", "p_flaky", "p_lookup", "p_broken"}},
		{"annotations all required", Filter{Annotations: []Annotation{ReadOnly, Idempotent}}, []string{"p_read", "p_read2", "p_lookup"}},
		{"glob and annotation", Filter{Tools: []string{"p_*"}, Annotations: []Annotation{ReadOnly}}, []string{"p_read", "p_read2", "p_lookup", "p_big", "p_secret", "p_embed", "p_text"}},
		{"nothing", Filter{Annotations: []Annotation{Destructive}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []string{}
			for _, tool := range tree.Tools() {
				if tt.filter.Matches(tool) {
					got = append(got, tool.Name())
				}
			}
			want := tt.want
			if want == nil {
				want = got[:0:0]
				for _, tool := range tree.Tools() {
					want = append(want, tool.Name())
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("matched %v, want %v", got, want)
			}
		})
	}
}

func TestHookConfigErrors(t *testing.T) {
	stage := func(next tools.Handler) tools.Handler { return next }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"hook without a name", Config{Hooks: []Hook{{Stage: stage}}}, "hooks[0]: a hook needs a name"},
		{"name taken", Config{Hooks: []Hook{{Name: "cache", Stage: stage}}}, `hooks[0]: the name "cache" is taken`},
		{"bad slot", Config{Hooks: []Hook{{Name: "x", Slot: 99, Stage: stage}}}, "hooks[0]: unknown pipeline slot Slot(99)"},
		{"bad hook filter", Config{Hooks: []Hook{{Name: "x", Filter: Filter{Tools: []string{"["}}, Stage: stage}}}, `hooks[0].filter.tools[0]: invalid glob pattern "["`},
		{"unknown stage", Config{Stages: map[string]StageConfig{"cach": {}}}, `stages.cach: unknown stage "cach"`},
		{"authorise filtered", Config{Stages: map[string]StageConfig{"authorise": {Filter: &Filter{}}}}, "stages.authorise: the authorise stage runs for every tool and caller; only its priority can change"},
		{"bad annotation", Config{Stages: map[string]StageConfig{"cache": {Filter: &Filter{Annotations: []Annotation{"readOnly"}}}}}, `stages.cache.filter.annotations[0]: unknown annotation "readOnly" (want one of: read_only, destructive, idempotent, open_world)`},
		{"flag of an unknown stage", Config{Flags: []FlagConfig{{Hooks: map[string]bool{"nope": true}}}}, `flags[0].hooks.nope: unknown stage "nope"`},
		{"flag of authorise", Config{Flags: []FlagConfig{{Hooks: map[string]bool{"authorise": false}}}}, "flags[0].hooks.authorise: the authorise stage runs for every caller (turn tools off with tools instead)"},
		{"flag of no tool", Config{Flags: []FlagConfig{{Tools: map[string]bool{"q_*": false}}}}, "flags[0].tools.q_*: matches no tool"},
		{"empty flag", Config{Flags: []FlagConfig{{Principals: []string{"*"}}}}, "flags[0]: turns nothing on or off (give hooks or tools)"},
		{"bad flag principal", Config{Flags: []FlagConfig{{Principals: []string{"bob"}, Tools: map[string]bool{"p_read": false}}}}, `flags[0].principals[0]: invalid principal "bob" (want "*", "subject:NAME" or "scope:NAME")`},
		{"bad flag session", Config{Flags: []FlagConfig{{Sessions: []string{"["}, Tools: map[string]bool{"p_read": false}}}}, `flags[0].sessions[0]: invalid glob pattern "["`},
		{"negative deadline", Config{DeadlineReminder: DeadlineConfig{Session: -time.Minute}}, "deadline_reminder.session: must not be negative, got -1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, probeTools(t).Tools())
			var ce ConfigErrors
			if !errors.As(err, &ce) || err.Error() != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

// recorder makes hooks that note the order they run in.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) hook(name string, slot tools.Slot, priority int, filter Filter) Hook {
	return Hook{Name: name, Slot: slot, Priority: priority, Filter: filter, Stage: func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			r.mu.Lock()
			r.ran = append(r.ran, name)
			r.mu.Unlock()
			return next(ctx, call)
		}
	}}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ran
	r.ran = nil
	return out
}

// TestHooksOrderAndFilter: within a slot the hooks run by priority, ties
// in their order; a filter limits a hook to its tools; the configuration
// changes both by name.
func TestHooksOrderAndFilter(t *testing.T) {
	var r recorder
	cfg := Config{
		Hooks: []Hook{
			r.hook("low", tools.SlotInput, -1, Filter{}),
			r.hook("first", tools.SlotInput, 0, Filter{}),
			r.hook("second", tools.SlotInput, 0, Filter{}),
			r.hook("high", tools.SlotInput, 5, Filter{}),
			r.hook("reads", tools.SlotInput, 0, Filter{Tools: []string{"p_read*"}}),
			r.hook("idempotent", tools.SlotInput, 0, Filter{Annotations: []Annotation{Idempotent}}),
			r.hook("outer", tools.SlotRateLimit, -10, Filter{}),
			r.hook("moved", tools.SlotInput, 0, Filter{}),
			r.hook("off", tools.SlotInput, 0, Filter{}),
		},
		Stages: map[string]StageConfig{
			"moved": {Priority: ptr(9), Filter: &Filter{Tools: []string{"p_write"}}},
			"off":   {Enabled: ptr(false)},
		},
	}
	h := newHarness(t, cfg)
	cs := h.client("s1")
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"p_read", nil, []string{"outer", "high", "first", "second", "reads", "idempotent", "low"}},
		{"p_write", map[string]any{"by": 1}, []string{"outer", "moved", "high", "first", "second", "low"}},
		{"p_flaky", nil, []string{"outer", "high", "first", "second", "idempotent", "low"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			if res := cs.Call(context.Background(), tt.tool, tt.args, nil); res.IsError {
				t.Fatal(res.Text())
			}
			if got := r.take(); !slices.Equal(got, tt.want) {
				t.Errorf("ran %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBuiltinFilter: a built-in stage limited by the configuration to
// some tools skips the others.
func TestBuiltinFilter(t *testing.T) {
	cfg := Defaults()
	cfg.Output.MaxTextBytes = 10
	cfg.Stages = map[string]StageConfig{"cap_output": {Filter: &Filter{Tools: []string{"p_text"}}}}
	h := newHarness(t, cfg)
	cs := h.client("s1")
	if got := cs.Call(context.Background(), "p_big", nil, nil).Text(); strings.Contains(got, "truncated") {
		t.Errorf("p_big was cut: %q", got)
	}
	if got := cs.Call(context.Background(), "p_text", nil, nil).Text(); !strings.Contains(got, "[Output truncated") {
		t.Errorf("p_text was not cut: %q", got)
	}
}

// TestFlags: flags turn stages and tools on or off by principal and by
// session, the last matching flag deciding; a tool turned off is hidden
// from the tools/list of the principal, or of the session, and refused
// with the reason.
func TestFlags(t *testing.T) {
	var r recorder
	cfg := Config{
		Hooks: []Hook{r.hook("note", tools.SlotInput, 0, Filter{}), r.hook("extra", tools.SlotInput, 0, Filter{})},
		Stages: map[string]StageConfig{
			"extra": {Enabled: ptr(false)},
		},
		Flags: []FlagConfig{
			{Principals: []string{"subject:bob"}, Hooks: map[string]bool{"note": false}, Tools: map[string]bool{"p_w*": false}},
			{Principals: []string{"scope:admin"}, Hooks: map[string]bool{"extra": true}, Tools: map[string]bool{"p_write": true}},
			{Sessions: []string{"ci-*"}, Hooks: map[string]bool{"note": false}, Tools: map[string]bool{"p_read": false}},
			{Principals: []string{"*"}, Tools: map[string]bool{"p_big": false}},
		},
	}
	h := newHarness(t, cfg)
	tests := []struct {
		name    string
		ctx     context.Context
		session string
		tool    string
		ran     []string
		refusal string
		listed  bool
	}{
		{"default", as("alice"), "s1", "p_read", []string{"note"}, "", true},
		{"hook off for a subject", as("bob"), "s2", "p_read", []string{}, "", true},
		{"tool off for a subject", as("bob"), "s3", "p_write", nil, "Not authorised to call 'p_write': it is turned off for subject bob.", false},
		{"a later flag turns both on", as("bob", "admin"), "s4", "p_write", []string{"extra"}, "", true},
		{"hook on for a scope", as("carol", "admin"), "s5", "p_read", []string{"note", "extra"}, "", true},
		{"session", server.WithSessionName(as("alice"), "ci-7"), "c7", "p_read2", []string{}, "", true},
		{"tool off for everyone", as("alice"), "s9", "p_big", nil, "Not authorised to call 'p_big': it is turned off for everyone.", false},
		{"tool off for a session", server.WithSessionName(as("alice"), "ci-8"), "c8", "p_read", nil, "Not authorised to call 'p_read': it is turned off for session ci-8.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := h.client(tt.session)
			if got := slices.Contains(cs.ToolNames(tt.ctx), tt.tool); got != tt.listed {
				t.Errorf("%s listed = %v, want %v", tt.tool, got, tt.listed)
			}
			args := map[string]any{}
			if tt.tool == "p_write" {
				args["by"] = 1
			}
			res := cs.Call(tt.ctx, tt.tool, args, nil)
			got := r.take()
			if tt.refusal != "" {
				if !res.IsError || res.Text() != tt.refusal {
					t.Fatalf("got isError=%v %q, want %q", res.IsError, res.Text(), tt.refusal)
				}
				if h.count(cs) != 0 {
					t.Error("the refused call changed the state")
				}
				return
			}
			if res.IsError {
				t.Fatal(res.Text())
			}
			if !slices.Equal(got, tt.ran) && len(got)+len(tt.ran) > 0 {
				t.Errorf("ran %v, want %v", got, tt.ran)
			}
		})
	}
}

// TestHistory: a hook reads the session's last calls through the call, as
// the log keeps them: arguments redacted, class and message; the call
// itself is not among them.
func TestHistory(t *testing.T) {
	var seen []session.CallSummary
	var n int
	cfg := Config{
		Output: OutputConfig{Redact: []string{`sk-[A-Z]{8,}`}},
		Hooks: []Hook{{Name: "history", Slot: tools.SlotInput, Stage: func(next tools.Handler) tools.Handler {
			return func(ctx context.Context, call *tools.Call) *tools.Outcome {
				var err error
				if seen, err = call.History(ctx, n); err != nil {
					t.Error(err)
				}
				return next(ctx, call)
			}
		}}},
	}
	h := newHarness(t, cfg)
	ctx := context.Background()
	tests := []struct {
		n    int
		want []string
	}{
		{0, []string{}},
		{-1, []string{}},
		{2, []string{`p_write {"by":-1} failure Negative.`, `p_write {"by":2}  Added.`}},
		{1000, []string{`p_read {"key":"[REDACTED]"}  Read.`, `p_write {"by":-1} failure Negative.`, `p_write {"by":2}  Added.`}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			cs := h.client(fmt.Sprint("s", tt.n))
			n = 0
			cs.Call(ctx, "p_read", map[string]any{"key": "sk-ABCDEFGHIJ"}, nil)
			cs.Call(ctx, "p_write", map[string]any{"by": -1}, nil)
			cs.Call(ctx, "p_write", map[string]any{"by": 2}, nil)
			n = tt.n
			cs.Call(ctx, "p_text", nil, nil)
			got := []string{}
			for _, s := range seen {
				got = append(got, fmt.Sprintf("%s %s %s %s", s.Tool, s.Args, s.ErrorClass, s.Message))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("history %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDeadlineReminder: once the deadline is near, each result ends with
// a text block that says how near; the earlier deadline counts: a
// wall-clock one, or one after the session began.
func TestDeadlineReminder(t *testing.T) {
	clk := &clock{t: time.Now()}
	start := clk.Now()
	at := start.Add(time.Hour)
	cfg := Config{Now: clk.Now, DeadlineReminder: DeadlineConfig{At: at, Within: 10 * time.Minute}}
	h := newHarness(t, cfg)
	cs := h.client("s1")
	stamp := at.UTC().Format(time.RFC3339)
	tests := []struct {
		advance time.Duration
		want    string
	}{
		{0, ""},
		{50*time.Minute + 30*time.Second, "10 minutes to the deadline (" + stamp + ")."},
		{8*time.Minute + 30*time.Second, "1 minute to the deadline (" + stamp + ")."},
		{30 * time.Second, "Less than a minute to the deadline (" + stamp + ")."},
		{30 * time.Second, "The deadline (" + stamp + ") has passed."},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			clk.Advance(tt.advance)
			if got := feedback(t, cs.Call(context.Background(), "p_read", nil, nil)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	// The session's deadline comes first.
	clk = &clock{t: time.Now()}
	cfg = Config{Now: clk.Now, DeadlineReminder: DeadlineConfig{At: clk.Now().Add(time.Hour), Session: 30 * time.Minute, Within: 10 * time.Minute}}
	cs = newHarness(t, cfg).client("s2")
	feedback(t, cs.Call(context.Background(), "p_write", map[string]any{"by": 1}, nil)) // starts the session
	clk.Advance(25*time.Minute + 30*time.Second)
	if got := feedback(t, cs.Call(context.Background(), "p_read", nil, nil)); !strings.HasPrefix(got, "5 minutes to the deadline (") {
		t.Errorf("got %q, want 5 minutes to the session's deadline", got)
	}
}

// feedback returns the text of the block after a result's first, or "".
func feedback(t *testing.T, res mcptest.Result) string {
	t.Helper()
	if res.IsError {
		t.Fatal(res.Text())
	}
	if len(res.Content) < 2 {
		return ""
	}
	return res.Content[len(res.Content)-1].Text
}

func TestRemaining(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		left time.Duration
		want string
	}{
		{-time.Second, "The deadline (2026-11-25T17:00:00Z) has passed."},
		{0, "The deadline (2026-11-25T17:00:00Z) has passed."},
		{59 * time.Second, "Less than a minute to the deadline (2026-11-25T17:00:00Z)."},
		{time.Minute, "1 minute to the deadline (2026-11-25T17:00:00Z)."},
		{61 * time.Second, "2 minutes to the deadline (2026-11-25T17:00:00Z)."},
	}
	for _, tt := range tests {
		if got := remaining(tt.left, at); got != tt.want {
			t.Errorf("remaining(%s) = %q, want %q", tt.left, got, tt.want)
		}
	}
}

// TestHistoryBound: a hook gets at most tools.MaxHistory calls, however
// many it asks for.
func TestHistoryBound(t *testing.T) {
	var seen []session.CallSummary
	cfg := Config{Hooks: []Hook{{Name: "history", Slot: tools.SlotInput, Stage: func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			seen, _ = call.History(ctx, tools.MaxHistory+10)
			return next(ctx, call)
		}
	}}}}
	cs := newHarness(t, cfg).client("s1")
	for range tools.MaxHistory + 2 {
		cs.Call(context.Background(), "p_text", nil, nil)
	}
	if len(seen) != tools.MaxHistory {
		t.Errorf("got %d calls, want %d", len(seen), tools.MaxHistory)
	}
}

// TestBuiltinNames: the names the configuration checks are those of the
// built-in stages, in their order.
func TestBuiltinNames(t *testing.T) {
	h, err := New(Defaults(), probeTools(t).Tools())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var names []string
	for _, hk := range h.builtins() {
		names = append(names, hk.Name)
	}
	if !slices.Equal(names, builtinNames) {
		t.Errorf("built-in stages %v, names %v", names, builtinNames)
	}
}
