package policy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/tools"
)

// TestSteps checks Call.Authorise as the Steps stage sets it: the step is
// checked by the policies of the tool it names, with that tool and params;
// done runs their OnResult; unknown tools and denials are errors.
func TestSteps(t *testing.T) {
	var trace []string
	write := newTool(t, "write")
	outer := newTool(t, "outer")
	allow := &fakePolicy{name: "allow", trace: &trace}
	deny := &fakePolicy{name: "deny", trace: &trace, deny: policy.Deny("deny", "No writes.")}
	lookup := func(ps ...policy.Policy) func(string) (*tools.Tool, []policy.Policy) {
		return func(name string) (*tools.Tool, []policy.Policy) {
			if name == "write" {
				return write, ps
			}
			return nil, nil
		}
	}
	run := func(ps ...policy.Policy) (func(*tools.Outcome) error, error, error) {
		var done func(*tools.Outcome) error
		var err, unknown error
		call := &tools.Call{Tool: outer, Session: newSession(t), ID: "c1"}
		policy.Steps(lookup(ps...))(func(_ context.Context, call *tools.Call) *tools.Outcome {
			done, err = call.Authorise("write", noParams{})
			_, unknown = call.Authorise("nope", noParams{})
			return &tools.Outcome{Success: true}
		})(context.Background(), call)
		return done, err, unknown
	}

	done, err, unknown := run(allow)
	if err != nil || done == nil {
		t.Fatalf("Authorise = %v (done set: %v)", err, done != nil)
	}
	if unknown == nil || unknown.Error() != `unknown tool "nope"` {
		t.Errorf("unknown tool: %v", unknown)
	}
	if err := done(&tools.Outcome{Message: "wrote", Success: true}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"check allow", "result allow write wrote"}; !slices.Equal(trace, want) {
		t.Errorf("trace %q, want %q", trace, want)
	}

	trace = nil
	if _, err, _ := run(allow, deny, allow); err == nil || err.Error() != "No writes." {
		t.Errorf("denied step: %v", err)
	}
	if want := []string{"check allow", "check deny"}; !slices.Equal(trace, want) {
		t.Errorf("trace %q, want %q (the first denial wins)", trace, want)
	}

	failing := &fakePolicy{name: "failing", trace: &trace, result: errors.New("cannot record")}
	done, _, _ = run(failing)
	if err := done(&tools.Outcome{Success: true}); err == nil || err.Error() != "cannot record" {
		t.Errorf("done with a failing OnResult = %v", err)
	}
}

// observedFS is a memFS that also says which version the current call saw.
type observedFS struct {
	*memFS
	seen map[string]string
}

func (fs observedFS) Observed(p string) (string, bool, bool) {
	v, ok := fs.seen[p]
	return v, v != "", ok
}

// TestRememberPrefersObserved: a file changed by someone else between the
// call's read and the end of the call stays unknown.
func TestRememberPrefersObserved(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a": "1"})
	s := newSession(t)
	v, _, _ := w.fs.Version("a")
	fs := observedFS{memFS: w.fs, seen: map[string]string{"a": v}}
	if err := w.fs.write("a", "someone else's"); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.Remember(s, fs, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.CheckPaths(s, fs, []string{"a"}); err == nil || err.Error() != fmt.Sprintf(changed, "a") {
		t.Errorf("CheckPaths = %v, want the changed-since denial", err)
	}
	// A file the call saw removed is forgotten.
	fs.seen["a"] = ""
	if err := w.policy.Remember(s, fs, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.CheckPaths(s, fs, []string{"a"}); err == nil || err.Error() != fmt.Sprintf(mustRead, "a") {
		t.Errorf("CheckPaths = %v, want the must-read denial", err)
	}
}
