package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// succeeded is the STATE slice of tools that have succeeded at least once in
// the session, shared by every SequentialDependency.
var succeeded = session.NewKey[immutable.Set[string]]("policy.succeeded_tools")

// SequentialDependency denies a tool until every tool it depends on has
// succeeded at least once in the session.
type SequentialDependency struct {
	deps     map[string][]string
	governed map[string]bool
}

// NewSequentialDependency returns the policy for deps, which maps a tool to
// the tools that must have succeeded before it.
func NewSequentialDependency(deps map[string][]string) *SequentialDependency {
	p := &SequentialDependency{deps: map[string][]string{}, governed: map[string]bool{}}
	for tool, ds := range deps {
		p.deps[tool] = slices.Sorted(slices.Values(ds))
		p.governed[tool] = true
		for _, d := range ds {
			p.governed[d] = true
		}
	}
	return p
}

// Name returns "sequential_dependency".
func (p *SequentialDependency) Name() string { return "sequential_dependency" }

// Tools returns every tool the policy names, sorted, so configuration can
// check that they exist.
func (p *SequentialDependency) Tools() []string {
	var out []string
	for t := range p.governed {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Check denies the call while some of its tool's dependencies have not
// succeeded: "Tool 'deploy' requires: build, test" (the missing ones,
// sorted).
func (p *SequentialDependency) Check(call *tools.Call) error {
	deps := p.deps[call.Tool.Name()]
	if len(deps) == 0 {
		return nil
	}
	done, ok := session.Get(call.Session, succeeded)
	var missing []string
	for _, d := range deps {
		if !ok || !done.Has(d) {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	d := Deny(p.Name(), fmt.Sprintf("Tool '%s' requires: %s", call.Tool.Name(), strings.Join(missing, ", ")))
	d.Missing = "record of a successful call of " + strings.Join(missing, ", ")
	return d
}

// OnResult records the success of a tool the policy governs.
func (p *SequentialDependency) OnResult(call *tools.Call, out *tools.Outcome) error {
	name := call.Tool.Name()
	if !p.governed[name] {
		return nil
	}
	done, ok := session.Get(call.Session, succeeded)
	if !ok {
		done = immutable.NewSet[string](nil)
	}
	if !done.Has(name) {
		session.Set(call.Session, succeeded, done.Add(name))
	}
	return nil
}
