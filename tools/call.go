package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/session"
)

// Call is one tool call as it passes through the pipeline: the arguments
// in. Each stage reads what earlier stages set and adds what later ones
// need; none reaches back. What the pipeline reports about the call (a
// cache hit, retries, the arguments as logged, the recorded event) travels
// back on its Outcome.
type Call struct {
	// ID identifies the call in the session's log and in resource URIs.
	ID string
	// Tool is the tool called (set by lookup).
	Tool *Tool
	// Args are the raw arguments as the client sent them, without the
	// "session" argument, which names the call's session and is taken out
	// by the server (normalised by the input stage, for the tools that
	// ask).
	Args json.RawMessage
	// Meta is the request's _meta object, if any.
	Meta map[string]any
	// Session is the call's session.
	Session *session.Session
	// Notifier sends progress and log notifications to the client.
	Notifier Notifier
	// Client makes requests of the client (sampling, elicitation); nil
	// when the transport has no way back to the client.
	Client Client
	// Logger logs to the server's log, with the call's attributes.
	Logger *slog.Logger
	// Started is when the call entered the pipeline.
	Started time.Time
	// DryRun says that the call must change nothing: its transaction is
	// always restored, and its result tells what it would have changed.
	// Stages that act on the world outside the session (asking the user
	// for consent) skip a dry run.
	DryRun bool

	// Params are the decoded arguments (set by validation).
	Params any
	// Timeout and Deadline bound the handler (set by the deadline stage).
	Timeout  time.Duration
	Deadline time.Time
	// Tx is the call's transaction (set by the transaction stage; each
	// attempt of a retried call has its own).
	Tx *session.Tx
	// Authorise, when set (by the server's steps stage, policy.Steps), asks
	// whether the policies that govern the named tool allow a call of it
	// with params (a value of that tool's params type). A handler that
	// acts for other tools, one step at a time (apply_edits), calls it
	// before each step: an error is the denial. When allowed, it returns done, which the
	// handler calls once the step has succeeded, with the step's outcome,
	// to run the policies' OnResult for it inside this call's transaction.
	Authorise func(tool string, params any) (done func(*Outcome) error, err error)
	// ReadLog reads the last n calls of the session's log, oldest first
	// (set by the server; nil when it keeps no log of the session). Stages
	// read it through History.
	ReadLog func(ctx context.Context, n int) ([]session.CallSummary, error)

	commitHooks []func(*Outcome) error
	finalisers  []func(*Outcome)

	// state says how the call was answered, and overrunHooks are run if
	// it is answered without its pipeline (see Bound).
	state        atomic.Int32
	overrunMu    sync.Mutex
	overrunHooks []func(*Outcome)
}

// MaxHistory is the most calls Call.History returns.
const MaxHistory = 100

// History returns the last n calls of the call's session, at most
// MaxHistory, oldest first, as the session's log keeps them: the tool, the
// arguments as logged (redacted), how each went and its message. The call
// itself is not among them. It returns none when the server keeps no log
// of the session (a request's session of its own).
func (c *Call) History(ctx context.Context, n int) ([]session.CallSummary, error) {
	if c.ReadLog == nil || n <= 0 {
		return nil, nil
	}
	return c.ReadLog(ctx, min(n, MaxHistory))
}

// OnCommit registers fn to run after the handler succeeds, inside the
// transaction and before it commits. An error from fn fails the call and
// rolls the transaction back. Policies use it for their OnResult step.
func (c *Call) OnCommit(fn func(*Outcome) error) {
	c.commitHooks = append(c.commitHooks, fn)
}

// RunCommitHooks runs the hooks registered with OnCommit, in order, and
// returns the first error.
func (c *Call) RunCommitHooks(o *Outcome) error {
	for _, fn := range c.commitHooks {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Finally registers fn to run once the call is over, whatever happened:
// after the outermost stage has its outcome, panics included. Finalisers run
// in reverse order of registration, as deferred calls do, each with the
// outcome the client receives. Stages use it to release what they took (a
// semaphore slot, a quota unit); Finalise runs them.
func (c *Call) Finally(fn func(*Outcome)) {
	c.finalisers = append(c.finalisers, fn)
}

// Finalise is the outermost stage of every pipeline. It runs the rest of
// it, turns a panic in any stage into an internal-error outcome (the stack
// goes to the call's log), and then runs the call's finalisers, last
// registered first. A finaliser that panics is logged and the others still
// run, so nothing an earlier stage took can leak.
func Finalise(next Handler) Handler {
	return func(ctx context.Context, call *Call) (out *Outcome) {
		defer func() {
			if p := recover(); p != nil {
				out = Panicked(call, p)
			}
			for len(call.finalisers) > 0 {
				fn := call.finalisers[len(call.finalisers)-1]
				call.finalisers = call.finalisers[:len(call.finalisers)-1]
				runFinaliser(call, fn, out)
			}
		}()
		return next(ctx, call)
	}
}

func runFinaliser(call *Call, fn func(*Outcome), out *Outcome) {
	defer func() {
		if p := recover(); p != nil && call.Logger != nil {
			call.Logger.Error("a finaliser panicked", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	fn(out)
}

// Panicked returns the outcome of a call during which something panicked
// with p, and logs p with the stack. The client reads only
// "Tool 'x' failed: internal error".
func Panicked(call *Call, p any) *Outcome {
	if call.Logger != nil {
		call.Logger.Error("tool call panicked", "panic", p, "stack", string(debug.Stack()))
	}
	name := ""
	if call.Tool != nil {
		name = call.Tool.Name()
	}
	o := Failure(ClassPanic, fmt.Sprintf("Tool '%s' failed: internal error", name))
	o.Err = fmt.Errorf("panic: %v", p)
	return o
}

// Notifier sends notifications about a call to the client that made it.
// Both methods are no-ops when the client did not ask for them.
type Notifier interface {
	// Progress reports progress; total is 0 when unknown.
	Progress(ctx context.Context, progress, total float64, message string) error
	// Log sends a log message at an RFC 5424 level ("info", "warning", ...).
	Log(ctx context.Context, level string, data any) error
}

// Client is the client that made a call, as a handler sees it: the
// requests a server may make of its client while it serves a call, and
// control of the stream that carries the call's messages. The server
// implements it for both protocol eras. A client of the 2025-11-25 era is
// sent the request (elicitation/create, sampling/createMessage) over the
// transport's way back to it, and the call waits for the answer. A client
// of the 2026-07-28 era cannot be sent requests: the first time a call asks
// something whose answer it does not have, the request fails with
// ErrInputRequired, the call is rolled back, and the client is answered
// input_required (multi round-trip requests); it retries the call with the
// answer, and the call runs again from the start, this time getting the
// answer. A handler must therefore ask the same questions in the same order
// each time it runs with the same arguments, and change nothing outside its
// transaction before its last question.
type Client interface {
	// CreateMessage asks the client's model for a message
	// (sampling/createMessage) and waits for it.
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Elicit asks the user, through the client, for input
	// (elicitation/create) and waits for the answer.
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	// CloseStream ends the HTTP response stream that carries the call's
	// messages before the call is done; the client reconnects and resumes
	// it, and the rest of the call's messages reach it there (SSE polling).
	// It is a no-op on transports without such a stream.
	CloseStream()
}

// ErrNoClient is returned by Context's client requests when the transport
// has no way back to the client, or the client did not declare the
// capability the request needs (elicitation, sampling).
var ErrNoClient = errors.New("no way to reach the client")

// ErrInputRequired is returned by Context's client requests to a call of a
// client of the 2026-07-28 era whose answer is not known yet (see Client).
// The handler should return at once, with any error or result: the call
// is rolled back whatever it returns, and runs again with the answer.
var ErrInputRequired = errors.New("the client's answer is needed: the call runs again once the client gives it")

// Context is what a handler receives: the call's context (deadline and
// cancellation), the call, its session, and a logger.
type Context struct {
	context.Context
	Call    *Call
	Session *session.Session
	Logger  *slog.Logger
}

// NewContext returns the handler context for call.
func NewContext(ctx context.Context, call *Call) *Context {
	return &Context{Context: ctx, Call: call, Session: call.Session, Logger: call.Logger}
}

// Progress reports the call's progress to the client, if it asked for it.
func (c *Context) Progress(progress, total float64, message string) error {
	if c.Call.Notifier == nil {
		return nil
	}
	return c.Call.Notifier.Progress(c, progress, total, message)
}

// Log sends a log message about the call to the client, if it asked for
// them.
func (c *Context) Log(level string, data any) error {
	if c.Call.Notifier == nil {
		return nil
	}
	return c.Call.Notifier.Log(c, level, data)
}

// CreateMessage asks the client's model for a message; see Client.
func (c *Context) CreateMessage(req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if c.Call.Client == nil {
		return nil, ErrNoClient
	}
	return c.Call.Client.CreateMessage(c, req)
}

// Elicit asks the user, through the client, for input; see Client.
func (c *Context) Elicit(req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if c.Call.Client == nil {
		return nil, ErrNoClient
	}
	return c.Call.Client.Elicit(c, req)
}

// CloseStream ends the stream carrying the call's messages, if there is
// one; see Client.
func (c *Context) CloseStream() {
	if c.Call.Client != nil {
		c.Call.Client.CloseStream()
	}
}

// Dispatch sends an event to the session's reducers. The handler of a
// tool annotated read-only may not: the calls of such a tool run together,
// with no snapshot to restore.
func (c *Context) Dispatch(ev any) error {
	if c.Call.Tool != nil && c.Call.Tool.Annotations().ReadOnly {
		return fmt.Errorf("tool %s is read-only: it may not dispatch %T", c.Call.Tool.Name(), ev)
	}
	return c.Session.Dispatch(ev)
}

// Handler runs a call and returns its outcome. It never returns nil.
type Handler func(ctx context.Context, call *Call) *Outcome

// Middleware wraps a Handler with one stage of the pipeline.
type Middleware func(Handler) Handler

// Chain composes middleware; the first is the outermost.
func Chain(mws ...Middleware) Middleware {
	return func(h Handler) Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
}

// Resource returns the resource registered under k: the call's own when it
// was registered per call, otherwise the session's or the server's.
func Resource[T any](c *Context, k session.ResourceKey[T]) (T, error) {
	if c.Call.Tx != nil {
		return session.CallResource(c.Call.Tx, k)
	}
	if v, ok := session.Resource(c.Session, k); ok {
		return v, nil
	}
	var zero T
	return zero, fmt.Errorf("no resource %q", k.Name())
}
