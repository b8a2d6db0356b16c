package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	winkserver "github.com/wink-mcp/wink-mcp/server"
)

// Defaults for StdioOptions fields left at their zero value.
const (
	defaultMaxLineBytes = 16 << 20
	defaultDrainTimeout = 5 * time.Second
)

// cancelGrace bounds the wait, at shutdown, for calls whose contexts were
// cancelled at the end of the drain: a handler stuck in a system call
// must not keep the process alive. Such calls are abandoned.
const cancelGrace = 2 * time.Second

// StdioOptions configures ServeStdio. Zero values mean the defaults noted.
type StdioOptions struct {
	MaxLineBytes int                                   // longest accepted line; default 16 MiB
	DrainTimeout time.Duration                         // how long in-flight requests may run after input ends; default 5s
	Logger       *slog.Logger                          // default slog.Default(); NEVER write logs to the out writer
	ContextFunc  func(context.Context) context.Context // optional, applied to every request context

	// drainStarted, if set, is called when reading has stopped and the
	// drain begins, so that tests can observe that state without sleeping.
	drainStarted func()
}

// withDefaults returns o with every zero field replaced by its default.
func (o StdioOptions) withDefaults() StdioOptions {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = defaultMaxLineBytes
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ServeStdio serves MCP over newline-delimited JSON-RPC on in/out with srv until
// in reaches EOF or ctx is cancelled, then lets in-flight requests finish (up to
// DrainTimeout, after which their contexts are cancelled and they are waited
// for, a further two seconds at most) and returns nil.
//
// Each call registers its own session, with ID "stdio", on srv, so one srv
// can serve only one stdio connection at a time. A read error other than EOF
// also ends serving; it is returned, wrapped, after the drain. If ctx is
// cancelled while a read from in is blocked, that read is abandoned: its
// goroutine exits once the read returns, for example when in is closed.
func ServeStdio(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer, opts StdioOptions) error {
	opts = opts.withDefaults()
	session := newStdioSession()
	if err := srv.RegisterSession(ctx, session); err != nil {
		return fmt.Errorf("transport: register stdio session: %w", err)
	}
	defer srv.UnregisterSession(context.WithoutCancel(ctx), session.SessionID())

	session.writer = newStdioWriter(out, session.notifications, opts.Logger)
	defer session.writer.stop()
	c := newStdioConn(ctx, srv, session, opts)
	readErr := c.readLoop(ctx, newLineReader(in, opts.MaxLineBytes))
	c.drain()
	close(c.idle)
	return readErr
}

// stdioConn is the state of one ServeStdio call.
type stdioConn struct {
	srv     *server.MCPServer
	session *stdioSession
	opts    StdioOptions
	logger  *slog.Logger

	// baseCtx is the parent of every request context. It ignores the
	// cancellation of ServeStdio's ctx and is cancelled by cancelRequests
	// only when the drain timeout expires.
	baseCtx        context.Context
	cancelRequests context.CancelFunc

	inflight sync.WaitGroup // requests being handled

	// idle hands a request to a goroutine that has served one before and
	// waits for the next. A new goroutine would first have to grow its
	// stack for mcp-go's HandleMessage, whose frame is large: that costs
	// about a tenth of a call's CPU over stdio, at one call in flight and at
	// sixteen.
	idle chan func()
}

// newStdioConn prepares a connection serving srv through session.
func newStdioConn(ctx context.Context, srv *server.MCPServer, session *stdioSession, opts StdioOptions) *stdioConn {
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &stdioConn{
		srv:            srv,
		session:        session,
		opts:           opts,
		logger:         opts.Logger,
		baseCtx:        srv.WithContext(base, session),
		cancelRequests: cancel,
		idle:           make(chan func()),
	}
}

// readResult is one line, or the error that ended reading, handed from the
// reading goroutine to the read loop.
type readResult struct {
	line []byte
	err  error
}

// readLoop dispatches lines until input ends or ctx is cancelled. It
// returns nil on EOF and cancellation, and the read error otherwise. Lines
// are read on a goroutine of their own, so that cancelling ctx stops
// serving even while a read is blocked.
func (c *stdioConn) readLoop(ctx context.Context, lr *lineReader) error {
	results := make(chan readResult)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		for {
			line, err := lr.readLine()
			select {
			case results <- readResult{line: line, err: err}:
			case <-stopped:
				return
			}
			var tooLong *lineTooLongError
			if err != nil && !errors.As(err, &tooLong) {
				return
			}
		}
	}()
	for {
		select {
		case res := <-results:
			if res.err == nil {
				c.handleLine(res.line)
			} else if done, err := c.readFailed(res.err); done {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// readFailed handles an error from the line reader. It reports whether
// reading must stop, and the error ServeStdio should return.
func (c *stdioConn) readFailed(err error) (bool, error) {
	var tooLong *lineTooLongError
	switch {
	case errors.As(err, &tooLong):
		c.logger.Warn("transport: discarded over-long input line", "limit", tooLong.limit)
		c.reply(nil, errorResponse(nil, mcp.INVALID_REQUEST, tooLong.Error()))
		return false, nil
	case errors.Is(err, io.EOF):
		return true, nil
	default:
		c.logger.Error("transport: reading stdio input failed", "error", err)
		return true, fmt.Errorf("transport: read stdio input: %w", err)
	}
}

// validID reports whether id, not null, is a string or a number, the only
// ids JSON-RPC and MCP allow.
func validID(id json.RawMessage) bool {
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// handleLine dispatches one input line. Client notifications and responses
// are handled before the next line is read, and so is initialize, which is
// therefore answered before any request sent after it; every other request
// is started on a goroutine of its own.
func (c *stdioConn) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	m, err := winkserver.ParseMessage(line)
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			c.reply(nil, errorResponse(nil, mcp.INVALID_REQUEST, "Invalid Request"))
		} else {
			c.reply(nil, errorResponse(nil, mcp.PARSE_ERROR, "Parse error"))
		}
		return
	}
	switch {
	case m.HasID() && !validID(m.ID):
		c.reply(nil, errorResponse(nil, mcp.INVALID_REQUEST, "Invalid Request"))
	case m.Method == "" && m.HasID():
		c.handleResponse(line)
	case m.Method == "":
		c.reply(nil, errorResponse(nil, mcp.INVALID_REQUEST, "Invalid Request: missing method"))
	case !m.HasID():
		c.handleNotification(m)
	case m.Method == string(mcp.MethodInitialize):
		c.serveRequest(m)
	default:
		c.start(func() { c.serveRequest(m) })
	}
}

// start runs serve on an idle goroutine or, if none is idle, on a new one,
// which stays for later requests until the connection ends. Either way
// reading goes on at once.
func (c *stdioConn) start(serve func()) {
	c.inflight.Add(1)
	req := func() {
		defer c.inflight.Done()
		serve()
	}
	select {
	case c.idle <- req:
	default:
		go c.work(req)
	}
}

// work runs req, then each request handed to it while idle, until idle is
// closed.
func (c *stdioConn) work(req func()) {
	for ok := true; ok; req, ok = <-c.idle {
		req()
	}
}

// handleResponse routes a client response to the server→client request
// waiting for it.
func (c *stdioConn) handleResponse(line []byte) {
	if !c.session.deliver(line) {
		c.logger.Warn("transport: dropping response that matches no pending request",
			"message", truncate(line, 200))
	}
}

// handleNotification handles a client notification, so that notifications
// take effect in the order they were sent. mcp-go returns no response for a
// well-formed notification; anything it does return (such as an
// invalid-version error) is written.
func (c *stdioConn) handleNotification(m winkserver.Message) {
	if resp := c.dispatch(c.baseCtx, m); resp != nil {
		c.reply(nil, resp)
	}
}

// serveRequest handles one request and writes its response, once: a call
// that overruns its deadline is answered by the server through the
// request's Reply, and what the request returns later is dropped.
func (c *stdioConn) serveRequest(m winkserver.Message) {
	r := winkserver.NewReply(m.ID, func(resp mcp.JSONRPCMessage, _ bool) { c.reply(m.ID, resp) })
	r.Send(c.dispatch(r.Context(c.baseCtx), m))
}

// dispatch passes a message to srv in ctx. A panic becomes a -32603
// response when the message is a request (it has an id) and is logged with
// its stack.
func (c *stdioConn) dispatch(ctx context.Context, m winkserver.Message) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error("transport: panic while handling MCP message",
				"panic", r, "id", string(m.ID), "stack", string(debug.Stack()))
			resp = nil
			if m.HasID() {
				resp = errorResponse(m.ID, mcp.INTERNAL_ERROR, fmt.Sprintf("Internal error: %v", r))
			}
		}
	}()
	if c.opts.ContextFunc != nil {
		ctx = c.opts.ContextFunc(ctx)
	}
	return winkserver.Handle(ctx, c.srv, m)
}

// reply queues resp to be written. If resp cannot be encoded and answers a
// request, an internal error for that request is written instead.
func (c *stdioConn) reply(id json.RawMessage, resp mcp.JSONRPCMessage) {
	err := c.session.writer.post(resp)
	var encErr *encodeError
	if errors.As(err, &encErr) && id != nil {
		c.logger.Error("transport: response cannot be encoded", "id", string(id), "error", err)
		err = c.session.writer.post(errorResponse(id, mcp.INTERNAL_ERROR, "Internal error: response cannot be encoded"))
	}
	if err != nil {
		c.logger.Error("transport: writing response failed", "id", string(id), "error", err)
	}
}

// drain waits for in-flight requests after reading stopped. Server→client
// requests can no longer be answered, so they fail at once. Requests still
// running after DrainTimeout have their contexts cancelled and are waited
// for up to cancelGrace; any still running then are abandoned, and their
// responses are never written.
func (c *stdioConn) drain() {
	defer c.cancelRequests()
	if c.opts.drainStarted != nil {
		c.opts.drainStarted()
	}
	c.session.fail(errSessionClosed)
	finished := make(chan struct{})
	go func() {
		c.inflight.Wait()
		close(finished)
	}()
	timer := time.NewTimer(c.opts.DrainTimeout)
	defer timer.Stop()
	select {
	case <-finished:
		return
	case <-timer.C:
	}
	c.logger.Warn("transport: drain timeout expired; cancelling in-flight requests",
		"timeout", c.opts.DrainTimeout)
	c.cancelRequests()
	grace := time.NewTimer(cancelGrace)
	defer grace.Stop()
	select {
	case <-finished:
	case <-grace.C:
		c.logger.Error("transport: in-flight requests ignore their cancellation; stopping without them",
			"grace", cancelGrace)
	}
}

// errorResponse builds a JSON-RPC error response. A nil id is written as
// null; otherwise the raw id is echoed exactly as the client sent it.
func errorResponse(id json.RawMessage, code int, message string) mcp.JSONRPCError {
	var reqID mcp.RequestId
	if id != nil {
		reqID = mcp.NewRequestId(id)
	}
	return mcp.NewJSONRPCError(reqID, code, message, nil)
}

// truncate returns at most n bytes of b as a string, for logging.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
