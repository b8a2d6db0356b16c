// Package policy decides whether a tool call may run, and remembers what
// past calls did so later decisions can depend on them.
//
// A Policy separates the decision (Check) from the wrapper (Middleware),
// which runs the checks of every policy that applies to a call, in order,
// and registers their OnResult steps to run inside the call's transaction.
// Policy memory lives in STATE slices of the session, so a failed call
// rolls it back with everything else.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Policy allows or denies tool calls.
type Policy interface {
	// Name identifies the policy in logs and configuration.
	Name() string
	// Check returns nil to allow the call, or an error (usually a *Denial)
	// whose text is the reason it is denied.
	Check(call *tools.Call) error
	// OnResult runs after a successful call, inside its transaction; an
	// error fails the call and rolls it back.
	OnResult(call *tools.Call, out *tools.Outcome) error
}

// Denial is a policy's refusal of a call.
type Denial struct {
	Policy string
	Reason string
	// Missing names what the policy looked for in the session and did
	// not find, when that is why it denies the call (see
	// tools.Result.Missing).
	Missing string
}

// Error returns the reason.
func (d *Denial) Error() string { return d.Reason }

// Deny returns a denial by the named policy.
func Deny(policy, reason string) *Denial { return &Denial{Policy: policy, Reason: reason} }

// Middleware runs the policies that forTool returns for the called tool. The
// first denial wins: its reason becomes the error result and the handler
// does not run. When all allow, each policy's OnResult is registered to run
// before the call commits.
func Middleware(forTool func(*tools.Tool) []Policy) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			ps := forTool(call.Tool)
			for _, p := range ps {
				if err := p.Check(call); err != nil {
					o := tools.Failure(tools.ClassPolicy, err.Error())
					var d *Denial
					if errors.As(err, &d) {
						o.Missing = d.Missing
					} else {
						o.Err = err
					}
					return o
				}
			}
			for _, p := range ps {
				call.OnCommit(func(out *tools.Outcome) error { return p.OnResult(call, out) })
			}
			return next(ctx, call)
		}
	}
}

// Steps returns a stage that sets call.Authorise, so that a handler acting
// for other tools can have each of its steps checked by the policies of the
// tool the step stands for, exactly as a call of that tool would be (see
// tools.Call.Authorise). lookup returns a tool offered by the server, by
// name, and the policies that apply to it; a nil tool is unknown.
func Steps(lookup func(name string) (*tools.Tool, []Policy)) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			call.Authorise = func(name string, params any) (func(*tools.Outcome) error, error) {
				t, ps := lookup(name)
				if t == nil {
					return nil, fmt.Errorf("unknown tool %q", name)
				}
				args, err := json.Marshal(params)
				if err != nil {
					return nil, err
				}
				step := &tools.Call{
					ID: call.ID, Tool: t, Args: args, Meta: call.Meta, Session: call.Session,
					Notifier: call.Notifier, Logger: call.Logger, Started: call.Started,
					Params: params, Timeout: call.Timeout, Deadline: call.Deadline, Tx: call.Tx,
				}
				for _, p := range ps {
					if err := p.Check(step); err != nil {
						return nil, err
					}
				}
				return func(out *tools.Outcome) error {
					for _, p := range ps {
						if err := p.OnResult(step, out); err != nil {
							return err
						}
					}
					return nil
				}, nil
			}
			return next(ctx, call)
		}
	}
}
