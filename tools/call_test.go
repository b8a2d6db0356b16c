package tools_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestChainOrder(t *testing.T) {
	var trace []string
	mw := func(name string) tools.Middleware {
		return func(next tools.Handler) tools.Handler {
			return func(ctx context.Context, call *tools.Call) *tools.Outcome {
				trace = append(trace, name+" in")
				o := next(ctx, call)
				trace = append(trace, name+" out")
				return o
			}
		}
	}
	final := func(ctx context.Context, call *tools.Call) *tools.Outcome {
		trace = append(trace, "handler")
		return &tools.Outcome{Message: "m", Success: true}
	}
	tests := []struct {
		name string
		mws  []tools.Middleware
		want []string
	}{
		{"none", nil, []string{"handler"}},
		{"one", []tools.Middleware{mw("a")}, []string{"a in", "handler", "a out"}},
		{"first is outermost", []tools.Middleware{mw("a"), mw("b"), mw("c")}, []string{"a in", "b in", "c in", "handler", "c out", "b out", "a out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trace = nil
			o := tools.Chain(tt.mws...)(final)(context.Background(), &tools.Call{})
			if o == nil || o.Message != "m" {
				t.Errorf("outcome = %+v", o)
			}
			if !slices.Equal(trace, tt.want) {
				t.Errorf("trace = %q, want %q", trace, tt.want)
			}
		})
	}
}

func TestChainShortCircuit(t *testing.T) {
	ran := false
	deny := func(tools.Handler) tools.Handler {
		return func(context.Context, *tools.Call) *tools.Outcome {
			return tools.Failure(tools.ClassPolicy, "no")
		}
	}
	h := tools.Chain(deny)(func(context.Context, *tools.Call) *tools.Outcome {
		ran = true
		return &tools.Outcome{Success: true}
	})
	if o := h(context.Background(), &tools.Call{}); o.Success || o.Message != "no" || ran {
		t.Errorf("outcome %+v, handler ran: %v", o, ran)
	}
}

func TestCommitHooks(t *testing.T) {
	errHook := errors.New("hook failed")
	tests := []struct {
		name    string
		fail    int // index of the hook that fails, -1 for none
		want    []int
		wantErr error
	}{
		{"all run in order", -1, []int{0, 1, 2}, nil},
		{"first error stops the rest", 1, []int{0, 1}, errHook},
		{"error in the first", 0, []int{0}, errHook},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c tools.Call
			var ran []int
			out := &tools.Outcome{Message: "x"}
			for i := range 3 {
				c.OnCommit(func(o *tools.Outcome) error {
					if o != out {
						t.Errorf("hook %d got %p, want %p", i, o, out)
					}
					ran = append(ran, i)
					if i == tt.fail {
						return errHook
					}
					return nil
				})
			}
			if err := c.RunCommitHooks(out); !errors.Is(err, tt.wantErr) {
				t.Errorf("RunCommitHooks = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(ran, tt.want) {
				t.Errorf("ran %v, want %v", ran, tt.want)
			}
		})
	}
	var empty tools.Call
	if err := empty.RunCommitHooks(&tools.Outcome{}); err != nil {
		t.Errorf("no hooks: %v", err)
	}
}

type recordingNotifier struct{ got []string }

func (n *recordingNotifier) Progress(ctx context.Context, progress, total float64, message string) error {
	n.got = append(n.got, "progress "+message)
	return nil
}

func (n *recordingNotifier) Log(ctx context.Context, level string, data any) error {
	n.got = append(n.got, "log "+level)
	return nil
}

type ping struct{}

func TestContext(t *testing.T) {
	r := session.NewRegistry()
	pings := session.NewKey[int]("test.pings")
	session.On(r, pings, func(old int, ok bool, _ ping) (int, error) { return old + 1, nil })
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	call := &tools.Call{Session: s}
	ctx := tools.NewContext(parent, call)
	if ctx.Call != call || ctx.Session != s || ctx.Value(key{}) != "v" {
		t.Errorf("NewContext = %+v", ctx)
	}
	// Without a notifier, progress and logs are dropped quietly.
	if err := ctx.Progress(1, 2, "half"); err != nil {
		t.Errorf("Progress without notifier: %v", err)
	}
	if err := ctx.Log("info", "x"); err != nil {
		t.Errorf("Log without notifier: %v", err)
	}
	n := &recordingNotifier{}
	call.Notifier = n
	_ = ctx.Progress(1, 2, "half")
	_ = ctx.Log("warning", "x")
	if want := []string{"progress half", "log warning"}; !slices.Equal(n.got, want) {
		t.Errorf("notifier got %q, want %q", n.got, want)
	}
	if err := ctx.Dispatch(ping{}); err != nil {
		t.Fatal(err)
	}
	if v, _ := session.Get(s, pings); v != 1 {
		t.Errorf("Dispatch reached the reducer %d times, want 1", v)
	}
	// A read-only tool's handler may not change state.
	call.Tool = tools.New("look", "Look.", tools.Annotations{Title: "Look", ReadOnly: true},
		func(*tools.Context, struct{}) (tools.Result[any], error) { return tools.OK[any]("", nil), nil })
	if err := ctx.Dispatch(ping{}); err == nil || err.Error() != "tool look is read-only: it may not dispatch tools_test.ping" {
		t.Errorf("Dispatch from a read-only tool = %v", err)
	}
	if v, _ := session.Get(s, pings); v != 1 {
		t.Errorf("a read-only tool's Dispatch reached the reducer: %d, want 1", v)
	}
}

func TestCallHistory(t *testing.T) {
	var asked []int
	log := func(_ context.Context, n int) ([]session.CallSummary, error) {
		asked = append(asked, n)
		return make([]session.CallSummary, n), nil
	}
	tests := []struct {
		name    string
		readLog func(context.Context, int) ([]session.CallSummary, error)
		n, want int
		asked   []int
	}{
		{"no log", nil, 5, 0, nil},
		{"none asked", log, 0, 0, nil},
		{"negative", log, -3, 0, nil},
		{"some", log, 5, 5, []int{5}},
		{"bounded", log, tools.MaxHistory + 1, tools.MaxHistory, []int{tools.MaxHistory}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			got, err := (&tools.Call{ReadLog: tt.readLog}).History(context.Background(), tt.n)
			if err != nil || len(got) != tt.want || !slices.Equal(asked, tt.asked) {
				t.Errorf("got %d calls, %v; asked the log for %v, want %d and %v", len(got), err, asked, tt.want, tt.asked)
			}
		})
	}
}
