package policy_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

type noParams struct{}

// newTool returns a real tool called name whose handler reports success.
func newTool(t testing.TB, name string) *tools.Tool {
	t.Helper()
	tl := tools.New(name, "A test tool.", tools.Annotations{Title: name},
		func(*tools.Context, noParams) (tools.Result[any], error) { return tools.OK[any]("ok", nil), nil })
	if err := tl.Check(); err != nil {
		t.Fatal(err)
	}
	return tl
}

func newSession(t testing.TB) *session.Session {
	t.Helper()
	s, err := session.NewRegistry().NewSession(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fakePolicy records what the middleware does with it.
type fakePolicy struct {
	name   string
	deny   error
	trace  *[]string
	result error
}

func (p *fakePolicy) Name() string { return p.name }

func (p *fakePolicy) Check(call *tools.Call) error {
	*p.trace = append(*p.trace, "check "+p.name)
	return p.deny
}

func (p *fakePolicy) OnResult(call *tools.Call, out *tools.Outcome) error {
	*p.trace = append(*p.trace, "result "+p.name+" "+call.Tool.Name()+" "+out.Message)
	return p.result
}

func TestDenial(t *testing.T) {
	d := policy.Deny("p", "Not now.")
	if d.Policy != "p" || d.Reason != "Not now." || d.Error() != "Not now." {
		t.Errorf("Deny = %+v, Error() = %q", d, d.Error())
	}
}

func TestMiddleware(t *testing.T) {
	errInternal := errors.New("workspace unavailable")
	errHook := errors.New("hook failed")
	tests := []struct {
		name        string
		policies    []fakePolicy
		wantMessage string
		wantClass   tools.ErrorClass
		wantErr     error // Outcome.Err
		wantRan     bool
		wantTrace   []string // after the commit hooks run, if the handler ran
		wantHookErr error
	}{
		{
			name:      "no policies",
			wantRan:   true,
			wantTrace: nil,
		},
		{
			name:      "all allow: checks in order, then every OnResult registered in order",
			policies:  []fakePolicy{{name: "a"}, {name: "b"}, {name: "c"}},
			wantRan:   true,
			wantTrace: []string{"check a", "check b", "check c", "result a deploy done", "result b deploy done", "result c deploy done"},
		},
		{
			name:        "first denial wins and the handler does not run",
			policies:    []fakePolicy{{name: "a"}, {name: "b", deny: policy.Deny("b", "B says no.")}, {name: "c", deny: policy.Deny("c", "C says no.")}},
			wantMessage: "B says no.",
			wantClass:   tools.ClassPolicy,
			wantTrace:   []string{"check a", "check b"},
		},
		{
			name:        "an error that is not a denial is kept for the log",
			policies:    []fakePolicy{{name: "a", deny: errInternal}},
			wantMessage: "workspace unavailable",
			wantClass:   tools.ClassPolicy,
			wantErr:     errInternal,
			wantTrace:   []string{"check a"},
		},
		{
			name:        "an OnResult error fails the commit hooks",
			policies:    []fakePolicy{{name: "a", result: errHook}, {name: "b"}},
			wantRan:     true,
			wantTrace:   []string{"check a", "check b", "result a deploy done"},
			wantHookErr: errHook,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			var ps []policy.Policy
			for i := range tt.policies {
				p := tt.policies[i]
				p.trace = &trace
				ps = append(ps, &p)
			}
			deploy := newTool(t, "deploy")
			var asked *tools.Tool
			forTool := func(tl *tools.Tool) []policy.Policy { asked = tl; return ps }
			ran := false
			h := policy.Middleware(forTool)(func(ctx context.Context, call *tools.Call) *tools.Outcome {
				ran = true
				return &tools.Outcome{Message: "done", Success: true}
			})
			call := &tools.Call{Tool: deploy, Session: newSession(t)}
			o := h(context.Background(), call)
			if asked != deploy {
				t.Errorf("forTool asked about %v, want the called tool", asked)
			}
			if ran != tt.wantRan {
				t.Fatalf("handler ran: %v, want %v", ran, tt.wantRan)
			}
			if tt.wantRan {
				if !o.Success {
					t.Fatalf("outcome %+v, want the handler's", o)
				}
				if err := call.RunCommitHooks(o); !errors.Is(err, tt.wantHookErr) {
					t.Errorf("RunCommitHooks = %v, want %v", err, tt.wantHookErr)
				}
			} else {
				if o.Success || o.Message != tt.wantMessage || o.Class != tt.wantClass || !errors.Is(o.Err, tt.wantErr) || (tt.wantErr == nil && o.Err != nil) {
					t.Errorf("outcome = {Success:%v Message:%q Class:%q Err:%v}, want {false %q %q %v}",
						o.Success, o.Message, o.Class, o.Err, tt.wantMessage, tt.wantClass, tt.wantErr)
				}
				// A denied call registers no hooks.
				if err := call.RunCommitHooks(o); err != nil {
					t.Errorf("RunCommitHooks after a denial = %v", err)
				}
			}
			if !slices.Equal(trace, tt.wantTrace) {
				t.Errorf("trace =\n  %q\nwant\n  %q", trace, tt.wantTrace)
			}
		})
	}
}

// pipeline runs call the way the server does, reduced to what policies
// need: the session lock, the policies, a transaction around the handler,
// and the commit hooks inside it. It returns the outcome.
func pipeline(t testing.TB, ps []policy.Policy, call *tools.Call) *tools.Outcome {
	t.Helper()
	s := call.Session
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	h := policy.Middleware(func(*tools.Tool) []policy.Policy { return ps })(func(ctx context.Context, call *tools.Call) *tools.Outcome {
		tx, err := s.Begin()
		if err != nil {
			t.Fatal(err)
		}
		o, err := call.Tool.Invoke(tools.NewContext(ctx, call), call.Params)
		if err != nil {
			o = tools.Failure(tools.ClassError, err.Error())
		}
		if o.Success {
			if err := call.RunCommitHooks(o); err != nil {
				o = tools.Failure(tools.ClassError, err.Error())
			}
		}
		if o.Success {
			tx.Commit()
		} else if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		return o
	})
	return h(context.Background(), call)
}
