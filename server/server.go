package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/telemetry"
	"github.com/wink-mcp/wink-mcp/tools"
)

// DefaultDeadline is the per-call deadline when Options.Deadline is zero.
const DefaultDeadline = 30 * time.Second

// Options configures New.
type Options struct {
	// Name and Version identify the server to clients.
	Name, Version string
	// Tree holds the sections whose tools the server offers.
	Tree *sections.Tree
	// Policies apply to every tool, after the tool's section's own.
	Policies []policy.Policy
	// Deadline bounds each call; zero means DefaultDeadline.
	Deadline time.Duration
	// SessionTTL is how long a session named by a handle alone may be
	// idle before it ends; zero means DefaultSessionTTL. (The implicit
	// session of a connection ends with the connection.)
	SessionTTL time.Duration
	// MaxSessionsPerPrincipal bounds the sessions one principal (the
	// identity of a request) holds live in this process, those it started
	// and those it continued: a request that would start one more gets
	// ErrTooManySessions's answer. Zero means no bound.
	MaxSessionsPerPrincipal int
	// History is how many of its last commits, and of its checkpoints,
	// each session's history keeps, for the history section's tools to
	// undo and restore (see HistorySection); zero keeps none.
	History int
	// Store keeps the sessions' state, so that a session outlives the
	// process that started it (see Sessions); nil means a store of this
	// process's memory (store.NewMemory). The caller closes it after the
	// server has stopped.
	Store store.Store
	// Stages are extra stages by the slot of the pipeline they run in
	// (see tools.Slot); within a slot the first is outermost. A nil
	// middleware is skipped, so that a disabled stage can be left in place.
	Stages map[tools.Slot][]tools.Middleware
	// Middleware are extra stages run just before validate, after those
	// of Stages[tools.SlotInput]; first outermost.
	Middleware []tools.Middleware
	// Consent, when set, is the consent stage: it runs after the
	// policies, before the retry slot and the transaction (see package
	// consent).
	Consent Consent
	// RequestStateKey signs the requestState of the calls that ask a
	// client of the 2026-07-28 era for input (see tools.Client); replicas
	// that serve one client must share it. Nil means a random key, good
	// for this process only.
	RequestStateKey []byte
	// ToolFilter, when set, hides from a client's tools/list every tool
	// it reports false for; ctx is the request's (it carries the
	// client's identity), and session the handle of the session the list
	// is for ("" before the client has one). It refuses no call: a stage
	// in a slot does that, with an error result (see package hooks,
	// Authorise).
	ToolFilter func(ctx context.Context, t *tools.Tool, session string) bool
	// Handlers are HTTP handlers by path that components of the server
	// offer besides MCP, such as "/metrics"; an HTTP transport mounts
	// Server.Handlers. Over stdio they are unused.
	Handlers map[string]http.Handler
	// Setup, when set, registers server-wide reducers and resources (such
	// as the secrets of package hooks) with the sessions' registry, after
	// the sections' own.
	Setup func(*session.Registry)
	// Telemetry, when set, reports each request to OpenTelemetry (a span
	// and the MCP metrics; see package telemetry), with a span for each
	// stage of a call that takes time when traces are exported.
	Telemetry *telemetry.Telemetry
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MCPOptions are passed on to mcp-go's server.
	MCPOptions []mcpserver.ServerOption
}

// Server is an MCP server whose tools come from a section tree.
type Server struct {
	mcp       *mcpserver.MCPServer
	tree      *sections.Tree
	registry  *session.Registry
	sessions  *sessions.Manager
	clients   clients // the connections
	seen      seen    // what each client was last told of (notify)
	awake     awake   // what keeps the store awake (awake.go)
	logger    *slog.Logger
	now       func() time.Time
	handler   tools.Handler
	deadline  time.Duration
	policies  map[*tools.Tool][]policy.Policy
	byName    map[string]*tools.Tool
	stateful  map[*tools.Tool]bool
	rerun     map[*tools.Tool]bool // the tools of Contained sections
	order     map[string]int
	handlers  map[string]http.Handler
	resources []resource // of a session's state, for content
	// deprecated holds the former _meta keys already logged (readMeta).
	deprecated sync.Map
	overruns   *overruns
	// name and version identify the server to clients (Options).
	name, version string
	stateKey      []byte // signs requestStates (input.go)
	tasks         *tasks
	consent       Consent                                                       // or nil
	tracer        trace.Tracer                                                  // of the stages' spans, or nil
	telemetry     *telemetry.Telemetry                                          // of the requests mcp-go does not dispatch, or nil
	toolFilter    func(ctx context.Context, t *tools.Tool, session string) bool // or nil
}

// Consent is a consent stage (package consent): its middleware, and
// whether it asks the user before a call of the named tool. A call it asks
// about does not become a task the server chose for a 2026-07-28 client,
// which answers the question by calling again (input_required).
type Consent interface {
	Middleware() tools.Middleware
	Asks(tool string) bool
}

// New builds the server: it sets up the sections' session state, registers
// every enabled tool, the sections' prompts and resources and the session
// log, and composes the call pipeline.
func New(opts Options) (*Server, error) {
	if opts.Tree == nil {
		return nil, errors.New("server: no section tree")
	}
	if opts.Deadline <= 0 {
		opts.Deadline = DefaultDeadline
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		consent:  opts.Consent,
		tree:     opts.Tree,
		registry: session.NewRegistry(),
		logger:   opts.Logger,
		now:      opts.Now,
		deadline: opts.Deadline,
		policies: map[*tools.Tool][]policy.Policy{},
		byName:   map[string]*tools.Tool{},
		stateful: map[*tools.Tool]bool{},
		rerun:    map[*tools.Tool]bool{},
		order:    map[string]int{},
		handlers: maps.Clone(opts.Handlers),
		stateKey: opts.RequestStateKey,
		name:     opts.Name,
		version:  opts.Version,
		clients: clients{
			registered: map[string]mcpserver.ClientSession{},
			listeners:  map[string][]mcpserver.ClientSession{},
		},
		seen: seen{digests: map[string]map[string][sha256.Size]byte{}},
	}
	s.overruns = &overruns{s: s}
	if s.stateKey == nil {
		s.stateKey = newStateKey()
	}
	if opts.Store == nil {
		opts.Store = store.NewMemory(store.Options{})
	}
	s.tasks = newTasks(opts.Store, opts.Logger, opts.Now)
	policy.Persist(s.registry)
	sections.Persist(s.registry)
	for _, sec := range opts.Tree.Sections() {
		if sec.Setup != nil {
			sec.Setup(s.registry)
		}
	}
	if opts.Setup != nil {
		opts.Setup(s.registry)
	}

	hooks := &mcpserver.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		s.clients.register(cs)
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.subscribe(ctx, req.Params.URI)
		s.subscribed(ctx, req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(s.unsubscribe)
	hooks.AddOnUnregisterSession(s.unregistered)
	// Not mcp-go's WithToolFilter: it also refuses hidden tools at call
	// time, as an unknown tool (JSON-RPC -32602), before the pipeline
	// runs; a refusal must be an error result that says why, and be
	// recorded and audited like any other failed call.
	s.toolFilter = opts.ToolFilter
	disclosing := opts.Tree.Opener() != nil
	if disclosing || opts.ToolFilter != nil {
		hooks.AddAfterListTools(s.listed)
	}
	if disclosing {
		hooks.AddBeforeSubscriptionsListen(s.listen)
		hooks.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
			s.unlisten(ctx)
		})
		hooks.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
			if method == mcp.MethodSubscriptionsListen {
				s.unlisten(ctx)
			}
		})
	}
	s.telemetry = opts.Telemetry
	if opts.Telemetry != nil {
		s.tracer = opts.Telemetry.Tracer()
		opts.MCPOptions = append(opts.Telemetry.Instrument(hooks), opts.MCPOptions...)
	}
	mcpOpts := append(s.taskSupport(hooks),
		mcpserver.WithToolCapabilities(disclosing),
		mcpserver.WithResourceCapabilities(true, false),
		mcpserver.WithPromptCapabilities(false),
		mcpserver.WithLogging(),
		mcpserver.WithInstructions(opts.Tree.Guidance()),
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolFilter(s.declarationOrder))
	if comp := newCompletions(opts.Tree); !comp.empty() {
		mcpOpts = append(mcpOpts,
			mcpserver.WithCompletions(),
			mcpserver.WithPromptCompletionProvider(comp),
			mcpserver.WithResourceCompletionProvider(comp))
	}
	s.mcp = mcpserver.NewMCPServer(opts.Name, opts.Version, append(mcpOpts, opts.MCPOptions...)...)
	servers.Store(s.mcp, s)
	s.sessions = sessions.New(sessions.Options{
		Registry:    s.registry,
		Store:       opts.Store,
		Logger:      opts.Logger,
		TTL:         opts.SessionTTL,
		MaxPerOwner: opts.MaxSessionsPerPrincipal,
		History:     opts.History,
		Now:         opts.Now,
		Changed:     func(h string) { s.notify(h, nil) },
	})

	handler, err := s.pipeline(opts)
	if err != nil {
		return nil, err
	}
	s.handler = handler

	for i, t := range opts.Tree.Tools() {
		owner := opts.Tree.Owner(t)
		s.order[t.Name()] = i
		s.byName[t.Name()] = t
		s.stateful[t] = !owner.Stateless
		s.rerun[t] = owner.Contained
		s.policies[t] = append(slices.Clone(owner.Policies), opts.Policies...)
		mt, err := advertised(t, s.stateful[t])
		if err != nil {
			return nil, fmt.Errorf("section %q: %w", owner.Key, err)
		}
		s.mcp.AddTool(mt, s.toolHandler(t))
	}
	s.addPrompts()
	s.addResources()
	return s, nil
}

// MCP returns the mcp-go server, for transports.
func (s *Server) MCP() *mcpserver.MCPServer { return s.mcp }

// Handlers returns the HTTP handlers, by path, that the server offers
// besides MCP (Options.Handlers), for an HTTP transport to mount.
func (s *Server) Handlers() map[string]http.Handler { return maps.Clone(s.handlers) }

// Close stops the server's work in the background on its store (watching
// it, sweeping sessions' unused blobs, expiring idle sessions) and waits
// for it and for the records of the calls made to reach the sessions'
// logs. The tasks still running are stopped first, keeping nothing, and
// their records say so. Call it before closing the store.
func (s *Server) Close() {
	s.tasks.close()
	servers.Delete(s.mcp)
	s.sessions.Close()
}

// Sessions returns the server's sessions.
func (s *Server) Sessions() *sessions.Manager { return s.sessions }

// Tools returns the offered tools in order.
func (s *Server) Tools() []*tools.Tool { return s.tree.Tools() }

// declarationOrder is a tool filter that lists tools in the tree's order
// instead of mcp-go's alphabetical one.
func (s *Server) declarationOrder(_ context.Context, ts []mcp.Tool) []mcp.Tool {
	slices.SortStableFunc(ts, func(a, b mcp.Tool) int { return s.order[a.Name] - s.order[b.Name] })
	return ts
}

// maxRuns is how many times a call of a Contained section's tool runs at
// most, when its commits keep losing to other writers of the session.
const maxRuns = 5

// toolHandler adapts the pipeline to mcp-go for tool t. It finds the
// call's session first (see Sessions.forRequest): a tool of a section that
// keeps state takes it from the "session" argument, which it removes
// before the arguments are validated and decoded, or from _meta; a call
// that changes state may start one. The result of a call that changed
// state names its session, and the clients subscribed to the session's
// resources are told. The record of each run goes to its session's log
// (callLog), unless the call started the session and failed: the session
// is then discarded.
//
// A call whose commit lost to another writer (sessions.ErrChanged) touched nothing
// outside the session's state if its tool's section is Contained: it is
// run again, on the session's latest revision, as a new call that passes
// every stage, within the first run's deadline, up to maxRuns runs in
// all. Any other call answers ChangedMessage, and the client calls again.
// A call that found its session replaced before it ran (sessions.ErrStale) has done
// nothing yet, and runs again whatever its section.
//
// A call of a client of the 2026-07-28 era that asked the client a
// question it has no answer to is answered input_required, with the
// question and the signed state that brings the answers back (input.go);
// a retry that brings an invalid state is refused before it runs.
//
// A call that brings no answers and asks to run as a task, or that a 2026-07-28 client lets the
// server make one, is answered with the task once it is started
// (startTask, tasks.go).
func (s *Server) toolHandler(t *tools.Tool) mcpserver.ToolHandlerFunc {
	stateful, changes := s.stateful[t], !t.Annotations().ReadOnly
	n := sessions.NeedAny
	switch {
	case stateful && changes:
		n = sessions.NeedNew
	case stateful:
		n = sessions.NeedExisting
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, handle := rawArgs(ctx, req), metaSession(req.Params.Meta)
		if stateful {
			h, rest, err := takeSession(args)
			if err != nil {
				return mcp.NewToolResultError(s.invalid(t, err)), nil
			}
			if h != "" {
				handle = h
			}
			args = rest
		}
		id, _ := identity.From(ctx)
		bound := bindInput(t.Name(), args, id.Principal())
		given, err := resume(s.stateKey, bound, req.Params.MultiRoundTripParams, s.now())
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if given == nil {
			if res, ok := s.startTask(ctx, t, taskOf(ctx), req, args, handle, n); ok {
				return res, nil
			}
		}
		for run := 1; ; run++ {
			u, err := s.use(ctx, s.request(ctx, handle, n), false)
			if err != nil {
				return s.sessionFailed(t, err), nil
			}
			call, out := s.run(ctx, t, u, req, args, given)
			asked, state, pending, err := inputPending(call, s.stateKey, bound, s.now())
			// A session started by a call that failed, or by a dry run,
			// holds nothing: it is discarded.
			shown := u.Handle // what the result names, if anything
			kept := !u.Minted || out.Success && !call.DryRun
			if u.Handle != "" && kept && !pending {
				s.sessions.Record(u.Handle, out.Invocation)
			}
			if (errors.Is(out.Err, sessions.ErrStale) || errors.Is(out.Err, sessions.ErrChanged) && s.rerun[t]) && !u.Minted && run < maxRuns && ctx.Err() == nil {
				call.Logger.Debug("the session changed elsewhere: running the call again", "run", run+1)
				if run == 1 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithDeadline(ctx, call.Deadline)
					defer cancel()
				}
				continue
			}
			if !kept {
				s.sessions.Discard(u.Handle) // with nothing logged: its handle was never shown
				shown = ""
			}
			if pending {
				if err != nil {
					return mcp.NewToolResultError(fmt.Sprintf("Tool '%s' failed: %v", t.Name(), err)), nil
				}
				res := &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired}}
				res.InputRequests, res.RequestState = asked, state
				return res, nil
			}
			if out.Success && changes {
				s.notify(u.Handle, u.Session.Committed())
			}
			if out.Success && t == s.tree.Opener() {
				s.toolsChanged(u.Handle)
			}
			if !stateful || !changes {
				shown = ""
			}
			return s.render(call, out, shown), nil
		}
	}
}

// run runs one call of tool t through the pipeline in the session u, and
// ends u's use of the session.
func (s *Server) run(ctx context.Context, t *tools.Tool, u *sessions.Use, req mcp.CallToolRequest, args json.RawMessage, given *answers) (*tools.Call, *tools.Outcome) {
	defer u.Release()
	ctx = context.WithValue(ctx, useKey{}, u)
	if h := u.History(); h != nil {
		ctx = session.WithHistory(ctx, h)
	}
	call := s.newCall(ctx, t, u.Session, req, args, given)
	if h := u.Handle; h != "" {
		call.ReadLog = func(ctx context.Context, n int) ([]session.CallSummary, error) {
			return s.sessions.Summaries(ctx, h, n)
		}
	}
	return call, s.handler(ctx, call)
}

func (s *Server) newCall(ctx context.Context, t *tools.Tool, sess *session.Session, req mcp.CallToolRequest, args json.RawMessage, given *answers) *tools.Call {
	call := &tools.Call{
		ID:      newCallID(),
		Tool:    t,
		Args:    args,
		Session: sess,
		Started: s.now(),
	}
	n := notifier{srv: mcpserver.ServerFromContext(ctx)}
	if n.srv == nil {
		n.srv = s.mcp
	}
	if m := req.Params.Meta; m != nil {
		call.Meta = s.readMeta(ctx, m.AdditionalFields)
		call.DryRun, _ = metaDryRun(call.Meta) // a malformed flag fails validation
		n.token = m.ProgressToken
	}
	call.Notifier = n
	cl := &client{srv: n.srv, ctx: ctx}
	if mcpserver.IsModernRequest(ctx) {
		cl.asking = &asking{}
		if given != nil {
			cl.asking.answers = *given
		}
	}
	call.Client = cl
	call.Logger = slog.New(&callHandler{Handler: s.logger.Handler(), attrs: [...]slog.Attr{
		slog.String("tool", t.Name()), slog.String("call", call.ID), slog.Any("session", session.LogHandle(sess.ID())),
	}})
	call.Deadline = callDeadline(ctx, call, s.deadline)
	call.Timeout = call.Deadline.Sub(call.Started).Round(time.Millisecond)
	return call
}

// rawArgs returns the arguments exactly as sent: those HandleMessage kept
// from mcp-go and put in ctx, or, for a message that reached mcp-go by
// another way (its in-process client), those of req.
func rawArgs(ctx context.Context, req mcp.CallToolRequest) json.RawMessage {
	if raw, ok := ctx.Value(rawKey{}).(sent); ok && raw.args != nil {
		return raw.args
	}
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

// callIDPrefix makes call ids unique across restarts; the counter makes
// them unique within the process without a random read per call.
var (
	callIDPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	callSeq atomic.Uint64
)

func newCallID() string {
	return callIDPrefix + strconv.FormatUint(callSeq.Add(1), 16)
}

// render turns an outcome into MCP content blocks: the text block, any extra
// blocks, structured content for a successful result of a tool with an
// output schema (always, so that the result is valid for the schema, even
// when the value is kept out of the text), and a resource link to a value
// kept out of the context.
// A successful result names its session when handle is set: in a last line
// of the text and in the structured content.
func (s *Server) render(call *tools.Call, out *tools.Outcome, handle string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: !out.Success}
	if len(out.Meta) > 0 {
		res.Meta = &mcp.Meta{AdditionalFields: out.Meta}
	}
	if !out.Success {
		handle = ""
	}
	text := out.Text()
	if handle != "" {
		if text != "" {
			text += "\n\n"
		}
		text += "Session: " + handle
	}
	res.Content = append([]mcp.Content{mcp.NewTextContent(text)}, out.Content...)
	if out.Success && out.HasValue() && out.Exclude {
		res.Content = append(res.Content, mcp.NewResourceLink(callURI(call.ID), "call "+call.ID, "The value of this call, kept out of the context.", "application/json"))
	}
	switch {
	case out.Success && out.HasValue() && call.Tool.OutputSchema() != nil:
		res.StructuredContent = out.Value
		if handle != "" {
			res.StructuredContent = withHandle{out.Value, handle}
		}
	case handle != "" && call.Tool.OutputSchema() == nil:
		res.StructuredContent = map[string]string{sessionArg: handle}
	}
	return res
}

// callHandler is the handler of a call's logger: it puts the call's
// attributes first in each record logged about the call, as
// slog.Logger.With would, but formats them only for a record logged,
// which most calls never have.
type callHandler struct {
	slog.Handler
	attrs [3]slog.Attr
}

func (h *callHandler) Handle(ctx context.Context, r slog.Record) error {
	c := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	c.AddAttrs(h.attrs[:]...)
	r.Attrs(func(a slog.Attr) bool {
		c.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, c)
}

func (h *callHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.Handler.WithAttrs(append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...))
}

func (h *callHandler) WithGroup(name string) slog.Handler {
	return h.Handler.WithAttrs(h.attrs[:]).WithGroup(name)
}
