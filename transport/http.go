package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/identity"
	winkserver "github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
)

// Defaults for HTTPOptions fields left at their zero value.
const (
	DefaultSessionTTL   = 30 * time.Minute
	DefaultSSERetry     = time.Second
	DefaultMaxBodyBytes = 4 << 20
	// DefaultReadTimeout bounds the reading of a whole request, headers
	// and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds how long a keep-alive connection waits for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConnections bounds the connections open at once.
	DefaultMaxConnections = 1024
)

const (
	// keepAlive is the time between comment lines on long-lived streams.
	keepAlive = 25 * time.Second
	// shutdownGrace bounds the closing of connections after the drain.
	shutdownGrace = 2 * time.Second
)

// HTTPOptions configures NewHTTP. Zero values mean the defaults noted.
type HTTPOptions struct {
	// Logger receives the transport's logs; default slog.Default().
	Logger *slog.Logger
	// SessionTTL is how long a session may be idle (no request in flight,
	// no stream open) before it ends; default 30 minutes. A stream open
	// with nothing else in flight ends once it has carried no message and
	// the session has seen no request for this long.
	SessionTTL time.Duration
	// ReadTimeout bounds the reading of a whole request, headers and body;
	// a body that comes too slowly gets 408. A response stream is not
	// bounded by it. Default 30 seconds.
	ReadTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed; default 2 minutes.
	IdleTimeout time.Duration
	// MaxConnections bounds the connections Serve keeps open at once;
	// further ones wait in the listen queue until one closes. Default
	// 1024.
	MaxConnections int
	// DrainTimeout bounds how long in-flight calls may run after shutdown
	// begins before their contexts are cancelled; default 30 seconds.
	DrainTimeout time.Duration
	// SSERetry is the reconnection delay announced on SSE response streams;
	// default 1 second.
	SSERetry time.Duration
	// BasePath is the path prefix under which clients reach the server when
	// a reverse proxy mounts it below the root ("/wink"); it is used in the
	// endpoint the SSE transport announces.
	BasePath string
	// Security holds the checks every request passes first.
	Security Security
	// Handlers are extra handlers to mount at their paths (for example
	// "/metrics"); they pass the same checks as /mcp, authentication
	// included.
	Handlers map[string]http.Handler
	// Pages are handlers for browsers, mounted at their paths ("/console"
	// and what is under it): they pass the Host and Origin checks of /mcp
	// and authenticate their requests themselves (HTTP.Verify checks a
	// token as /mcp does).
	Pages map[string]http.Handler
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	if o.SSERetry <= 0 {
		o.SSERetry = DefaultSSERetry
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.BasePath = strings.TrimRight(o.BasePath, "/")
	if o.Security.MaxBodyBytes <= 0 {
		o.Security.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return o
}

// HTTP serves an MCP server to remote clients over Streamable HTTP (at
// /mcp) and the legacy HTTP+SSE transport (at /sse and /message) on one
// listener, with /healthz for liveness. The package documentation says
// which parts mcp-go serves and why the rest is served here.
type HTTP struct {
	srv    *server.MCPServer
	opts   HTTPOptions
	logger *slog.Logger
	modern http.Handler

	// base is the parent of every session's and call's context, and ends
	// the idle sweeper; it is cancelled when the drain time runs out, or by
	// Close.
	base       context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*httpSession

	calls    sync.WaitGroup // in-flight calls
	draining atomic.Bool

	handler   http.Handler
	verifiers []verifier // the bearer token checks of /mcp
}

// NewHTTP returns the HTTP transport of srv. It starts a goroutine that
// ends idle sessions; Serve or Close stops it.
func NewHTTP(srv *server.MCPServer, opts HTTPOptions) (*HTTP, error) {
	opts = opts.withDefaults()
	h := &HTTP{
		srv:      srv,
		opts:     opts,
		logger:   opts.Logger,
		sessions: map[string]*httpSession{},
	}
	h.base, h.cancelBase = context.WithCancel(context.Background())
	h.modern = server.NewStreamableHTTPServer(srv,
		server.WithStateLess(true),
		server.WithDisableLocalhostProtection(true), // checked by Security for every path
		server.WithStreamableHTTPLogger(opts.Logger))
	handler, err := h.routes()
	if err != nil {
		return nil, err
	}
	h.handler = handler
	go h.sweepLoop()
	return h, nil
}

// Handler returns the transport's handler: every route behind the security
// checks.
func (h *HTTP) Handler() http.Handler { return h.handler }

// sessionCount returns the number of live client sessions.
func (h *HTTP) sessionCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func (h *HTTP) routes() (http.Handler, error) {
	sec, err := h.opts.Security.middleware(h.logger)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	protected := chain(sec.host, sec.origin, sec.auth)
	limited := chain(protected, sec.bodyLimit)
	mux.Handle("/mcp", limited(http.HandlerFunc(h.serveMCP)))
	mux.Handle("/sse", protected(http.HandlerFunc(h.serveSSE)))
	mux.Handle("/message", limited(http.HandlerFunc(h.serveMessage)))
	open := chain(sec.host, sec.origin)
	mux.Handle("/healthz", open(http.HandlerFunc(h.healthz)))
	if sec.metadata != nil {
		mux.Handle(metadataRoot, open(sec.metadata))
		mux.Handle(metadataPath, open(sec.metadata))
	}
	for path, hd := range h.opts.Handlers {
		mux.Handle(path, protected(hd))
	}
	for path, hd := range h.opts.Pages {
		mux.Handle(path, open(hd))
		mux.Handle(path+"/", open(hd))
	}
	h.verifiers = sec.verifiers
	return mux, nil
}

// ErrNoAuthentication is the error of Verify on a transport that
// authenticates nobody.
var ErrNoAuthentication = errors.New("transport: no authentication is configured")

// Verify checks a bearer token as /mcp checks it and returns whose it is.
// On a transport without authentication it returns ErrNoAuthentication.
func (h *HTTP) Verify(ctx context.Context, token string) (identity.Identity, error) {
	if len(h.verifiers) == 0 {
		return identity.Identity{}, ErrNoAuthentication
	}
	var errs []error
	for _, v := range h.verifiers {
		who, err := v(ctx, token)
		if err == nil {
			return who, nil
		}
		errs = append(errs, err)
	}
	return identity.Identity{}, errors.Join(errs...)
}

// healthz answers liveness probes: 200 with the number of live sessions,
// or 503 once the server is shutting down.
func (h *HTTP) healthz(w http.ResponseWriter, _ *http.Request) {
	status, code := "ok", http.StatusOK
	if h.draining.Load() {
		status, code = "draining", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "sessions": h.sessionCount()})
}

// Serve accepts connections on ln until ctx is cancelled, then shuts down
// gracefully: it stops taking requests, lets in-flight calls finish (each
// commits or restores whole) for up to DrainTimeout, cancels those still
// running, ends every session and returns nil. An error from the listener
// is returned after the sessions ended.
//
// At most MaxConnections connections of ln are open at once. A request
// must come whole, headers and body, within ReadTimeout; that bounds no
// response stream, since net/http lifts a connection's read deadline once
// the request's body has been read, to watch for the client going away. A
// keep-alive connection is closed after IdleTimeout without a request.
func (h *HTTP) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:     h.handler,
		ReadTimeout: h.opts.ReadTimeout,
		IdleTimeout: h.opts.IdleTimeout,
		ErrorLog:    slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limitListener(ln, h.opts.MaxConnections)) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		h.Close()
		return fmt.Errorf("transport: serve HTTP: %w", err)
	}
	h.shutdown(hs)
	return nil
}

// shutdown drains hs. New work is refused with 503 from here on, but the
// listener stays open while calls are in flight, so that clients can still
// answer their server→client requests (sampling, elicitation) and cancel
// calls. Calls still running after DrainTimeout are cancelled, and
// abandoned if they still run cancelGrace later. Then every session ends
// and the server shuts down.
func (h *HTTP) shutdown(hs *http.Server) {
	h.draining.Store(true)
	h.logger.Info("draining HTTP transport", "timeout", h.opts.DrainTimeout)
	h.releaseListeners()
	finished := make(chan struct{})
	go func() { h.calls.Wait(); close(finished) }()
	timer := time.NewTimer(h.opts.DrainTimeout)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		h.logger.Warn("drain timeout expired; cancelling in-flight calls", "timeout", h.opts.DrainTimeout)
		h.cancelBase()
		select {
		case <-finished:
		case <-time.After(cancelGrace):
			h.logger.Error("in-flight calls ignore their cancellation; stopping without them", "grace", cancelGrace)
		}
	}
	h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		_ = hs.Close()
	}
}

// Close ends every session and stops the idle sweeper. In-flight calls are
// not waited for; Serve's shutdown does that first.
func (h *HTTP) Close() {
	h.mu.Lock()
	all := make([]*httpSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		h.endSession(s, "shutdown")
	}
	h.cancelBase()
}

// releaseListeners closes the standalone streams, whose handlers would
// otherwise keep the server from shutting down.
func (h *HTTP) releaseListeners() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.sessions {
		s.mu.Lock()
		l := s.listener
		s.mu.Unlock()
		if l != nil {
			l.release()
		}
	}
}

// sweepLoop ends idle sessions until Close, or until the drain time runs
// out.
func (h *HTTP) sweepLoop() {
	interval := min(max(h.opts.SessionTTL/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			h.sweep(h.opts.Now())
		case <-h.base.Done():
			return
		}
	}
}

// sweep ends the sessions idle since before now - SessionTTL and returns
// how many it ended.
func (h *HTTP) sweep(now time.Time) int {
	cutoff := now.Add(-h.opts.SessionTTL)
	var idle []*httpSession
	h.mu.Lock()
	for _, s := range h.sessions {
		if s.idle(cutoff) {
			idle = append(idle, s)
		}
	}
	h.mu.Unlock()
	for _, s := range idle {
		h.endSession(s, "idle")
	}
	return len(idle)
}

// addSession registers a new session with mcp-go and the session table.
func (h *HTTP) addSession(ctx context.Context, s *httpSession) error {
	if err := h.srv.RegisterSession(ctx, s); err != nil {
		return err
	}
	h.mu.Lock()
	h.sessions[s.id] = s
	h.mu.Unlock()
	return nil
}

// endDeleted is why a session ends when its client deletes it.
const endDeleted = "deleted"

// endSession forgets s, closes it and unregisters it from mcp-go, whose
// unregister hook lets go of the server's state for it: the session's
// state ends with it when its client deleted it (endDeleted), and stays in
// the store otherwise (server.Sessions.End).
func (h *HTTP) endSession(s *httpSession, why string) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	if s.close() {
		ctx := context.Background()
		if why == endDeleted {
			ctx = winkserver.ClientEnded(ctx)
		}
		h.srv.UnregisterSession(ctx, s.id)
		h.logger.Debug("session ended", "mcp_session", session.LogHandle(s.id), "why", why)
	}
}

// session returns the live session called id, or nil.
func (h *HTTP) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// lookup returns the Streamable HTTP session named by the request's
// Mcp-Session-Id, or writes 400 (missing) or 404 (unknown or ended).
func (h *HTTP) lookup(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		http.Error(w, "Bad Request: missing Mcp-Session-Id header", http.StatusBadRequest)
		return nil
	}
	s := h.session(id)
	if s == nil || s.out != nil {
		http.Error(w, "Not Found: unknown or ended session", http.StatusNotFound)
		return nil
	}
	return s
}

// readMessage reads and parses a POST body holding one JSON-RPC message.
// On failure it writes the error response and returns ok false.
func readMessage(w http.ResponseWriter, r *http.Request) (m winkserver.Message, ok bool) {
	if !isJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "Unsupported Media Type: the body must be application/json", http.StatusUnsupportedMediaType)
		return m, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
			return m, false
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			http.Error(w, "Request Timeout: the body came too slowly", http.StatusRequestTimeout)
			return m, false
		}
		http.Error(w, "Bad Request: reading the body failed", http.StatusBadRequest)
		return m, false
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		writeJSONError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Invalid Request: batches are not supported")
		return m, false
	}
	m, err = winkserver.ParseMessage(body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "Parse error")
		return m, false
	}
	return m, true
}

// writeJSONError writes a JSON-RPC error response with the given status.
func writeJSONError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	writeJSON(w, status, errorResponse(id, code, message))
}

func writeJSON(w http.ResponseWriter, status int, msg any) {
	data, err := json.Marshal(msg)
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters.
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// acceptsSSE reports whether the client accepts an SSE response.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.TrimSpace(mt) {
			case "text/event-stream", "*/*", "text/*":
				return true
			}
		}
	}
	return false
}

// dispatch hands a message to mcp-go; a panic becomes an internal error
// response for a request.
func (h *HTTP) dispatch(ctx context.Context, m winkserver.Message) (resp mcp.JSONRPCMessage) {
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("transport: panic while handling MCP message", "panic", p, "stack", string(debug.Stack()))
			resp = nil
			if m.HasID() {
				resp = errorResponse(m.ID, mcp.INTERNAL_ERROR, fmt.Sprintf("Internal error: %v", p))
			}
		}
	}()
	return winkserver.Handle(ctx, h.srv, m)
}

// runCall handles a request of sess in ctx, writing what it sends and its
// response to sk. ctx descends from the session's, not from the HTTP
// request's, so that a call whose response is resumable outlives its
// connection; the call runs as the identity of that request's bearer token
// (reqCtx). The caller has added the call to h.calls, which Serve waits for
// when shutting down.
func (h *HTTP) runCall(ctx, reqCtx context.Context, sess *httpSession, sk sink, m winkserver.Message) {
	defer h.calls.Done()
	rs := &requestSession{httpSession: sess, pump: newRequestPump(sk)}
	rs.clientRequests = clientRequests{c: rs}
	if who, ok := identity.From(reqCtx); ok {
		ctx = identity.With(ctx, who)
	}
	ctx = h.srv.WithContext(ctx, rs)
	ctx = winkserver.WithStreamCloser(ctx, func() { _ = rs.pump.send(ctx, closeStream{}) })
	// A call that overruns its deadline is answered through r before it
	// returns; its response is then dropped.
	r := winkserver.NewReply(m.ID, func(resp mcp.JSONRPCMessage, early bool) {
		if early {
			sk.closing() // the handler keeps the connection
		}
		rs.pump.finish(resp)
	})
	sess.begin(h.opts.Now())
	resp := h.dispatch(r.Context(ctx), m)
	// The session is idle again from here: the response is written after,
	// so a client that has it knows the session's clock runs.
	sess.end(h.opts.Now())
	r.Send(resp)
}
