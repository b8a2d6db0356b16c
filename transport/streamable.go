package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	winkserver "github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
)

// serveMCP is the Streamable HTTP endpoint.
func (h *HTTP) serveMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// modernHeader reports whether the request's protocol version header names
// the stateless era (2026-07-28 or later).
func modernHeader(r *http.Request) bool {
	return mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// badVersion writes 400 and reports true when the request names a protocol
// version this server does not implement.
func badVersion(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || mcp.IsValidProtocolVersion(v) {
		return false
	}
	http.Error(w, "Bad Request: unsupported MCP-Protocol-Version "+v, http.StatusBadRequest)
	return true
}

// refuseDraining writes 503 while the server shuts down.
func (h *HTTP) refuseDraining(w http.ResponseWriter) bool {
	if !h.draining.Load() {
		return false
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Service Unavailable: shutting down", http.StatusServiceUnavailable)
	return true
}

func (h *HTTP) post(w http.ResponseWriter, r *http.Request) {
	m, ok := readMessage(w, r)
	if !ok {
		return
	}
	// While draining, only what lets in-flight calls finish is taken: the
	// client's replies to server→client requests, and notifications such
	// as notifications/cancelled.
	if m.Method != "" && m.HasID() && h.refuseDraining(w) {
		return
	}
	// A client of the stateless era names it in MCP-Protocol-Version on
	// every request (and in _meta, which must match; mcp-go checks that).
	if modernHeader(r) {
		if winkserver.TaskMessage(m) {
			// mcp-go's handler knows nothing of the server's tasks.
			writeJSON(w, http.StatusOK, h.dispatch(r.Context(), m))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(m.Raw()))
		mw := &modernWriter{ResponseWriter: w}
		if m.HasID() {
			// mcp-go writes the response; a call that overruns its
			// deadline is answered through mw before it returns.
			r = r.WithContext(winkserver.NewReply(m.ID, func(resp mcp.JSONRPCMessage, _ bool) { mw.answer(resp) }).Context(r.Context()))
		}
		h.modern.ServeHTTP(mw, r)
		mw.finish()
		return
	}
	if badVersion(w, r) {
		return
	}
	if m.Method == string(mcp.MethodInitialize) {
		h.initialize(w, r, m)
		return
	}
	sess := h.lookup(w, r)
	if sess == nil {
		return
	}
	if !h.answered(w, sess, m) {
		h.request(w, r, sess, m)
	}
}

// answered answers a message posted to sess that is not a request: a
// client's response to a request of the server, handed to its waiting
// sender; a notification, handled at once (202, or 400 with the error it
// caused); a message without a method, refused. It reports whether it did;
// the Streamable HTTP and SSE transports each run a request their own way.
func (h *HTTP) answered(w http.ResponseWriter, sess *httpSession, m winkserver.Message) bool {
	sess.touch(h.opts.Now())
	switch {
	case m.Method == "" && m.HasID():
		if !sess.deliver(m.Raw()) {
			h.logger.Warn("transport: dropping a response that matches no pending request", "mcp_session", session.LogHandle(sess.id))
		}
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "":
		writeJSONError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Invalid Request: missing method")
	case !m.HasID():
		if resp := h.dispatch(h.srv.WithContext(sess.ctx, sess), m); resp != nil {
			writeJSON(w, http.StatusBadRequest, resp)
		} else {
			w.WriteHeader(http.StatusAccepted)
		}
	default:
		return false
	}
	return true
}

// initialize starts a session: the response carries its Mcp-Session-Id.
// A failed initialize leaves no session behind.
func (h *HTTP) initialize(w http.ResponseWriter, r *http.Request, m winkserver.Message) {
	sess := newHTTPSession(h.base, rand.Text(), h.opts.Now())
	if err := h.addSession(r.Context(), sess); err != nil {
		h.logger.Error("transport: registering a session failed", "err", err)
		writeJSONError(w, http.StatusInternalServerError, m.ID, mcp.INTERNAL_ERROR, "Internal error: session registration failed")
		return
	}
	resp := h.dispatch(h.srv.WithContext(r.Context(), sess), m)
	if _, failed := resp.(mcp.JSONRPCError); failed || resp == nil {
		h.endSession(sess, "initialize failed")
		writeJSON(w, http.StatusOK, resp)
		return
	}
	w.Header().Set(server.HeaderKeySessionID, sess.id)
	writeJSON(w, http.StatusOK, resp)
}

// request handles a request of an initialized session on the goroutine
// net/http gave it. Its response is JSON unless the call sends something to
// the client first, in which case it becomes a resumable SSE stream. If the
// client goes away before it was given an event ID to resume from, the
// call is cancelled, as nothing can reach the client any more; otherwise
// it goes on, and its events are recorded.
func (h *HTTP) request(w http.ResponseWriter, r *http.Request, sess *httpSession, m winkserver.Message) {
	sk := &postSink{sess: sess, conn: newHTTPConn(w), sse: acceptsSSE(r), retry: h.opts.SSERetry, chunked: r.ProtoAtLeast(1, 1)}
	ctx, cancel := context.WithCancel(sess.ctx)
	defer cancel()
	stop := context.AfterFunc(r.Context(), func() {
		if !sk.resumable() {
			cancel()
		}
		sk.abandon()
	})
	defer stop()
	h.calls.Add(1)
	h.runCall(ctx, r.Context(), sess, sk, m)
}

// postSink writes a Streamable HTTP request's messages to its POST
// response: as JSON when there is only the response, or as a resumable SSE
// stream from the first message sent before it.
type postSink struct {
	sess    *httpSession
	conn    *httpConn
	sse     bool
	retry   time.Duration
	chunked bool // an SSE response has a chunked body (HTTP/1.1)

	mu    sync.Mutex
	st    *stream
	close bool // the response closes the connection
}

// closing has the response, unless a stream began, close the connection:
// the call's handler runs on, and keeps the connection from the client's
// next request.
func (p *postSink) closing() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.close = true
}

// stream returns the response stream, starting it on first use.
func (p *postSink) stream() (*stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st != nil {
		return p.st, nil
	}
	if !p.sse {
		return nil, errNoStream
	}
	p.st = p.sess.newStream(p.retry)
	_ = p.st.attach(p.conn) // if the client is gone, events are recorded for resumption
	return p.st, nil
}

func (p *postSink) send(msg any) error {
	st, err := p.stream()
	if err != nil {
		return err
	}
	return st.deliver(msg, false)
}

func (p *postSink) finish(resp mcp.JSONRPCMessage) {
	p.mu.Lock()
	st, closing := p.st, p.close
	p.mu.Unlock()
	if st != nil {
		if err := st.deliver(resp, true); err != nil {
			p.conn.release()
		}
		return
	}
	_ = p.conn.writeFlush(func(w http.ResponseWriter) error {
		data, err := json.Marshal(resp)
		if err != nil {
			data, _ = json.Marshal(errorResponse(nil, mcp.INTERNAL_ERROR, "Internal error: response cannot be encoded"))
		}
		data = append(data, '\n')
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		if closing {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(data)
		return err
	}, true) // one write still; and a call answered at its deadline while its handler runs is not held back
	p.conn.release()
}

// closeStream ends the POST response mid-call (starting the stream if
// needed, so that the client has an event ID to resume from).
func (p *postSink) closeStream() {
	st, err := p.stream()
	if err != nil {
		return
	}
	st.detach()
	p.conn.end(p.chunked)
}

// resumable reports whether the client has been given an event ID to
// resume from.
func (p *postSink) resumable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st != nil
}

// abandon stops writing to the POST response after the client went away.
func (p *postSink) abandon() {
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	if st != nil {
		st.detachIf(p.conn)
		return
	}
	p.conn.release()
}

// get opens the session's standalone SSE stream, or resumes a response
// stream with Last-Event-ID.
func (h *HTTP) get(w http.ResponseWriter, r *http.Request) {
	if modernHeader(r) {
		h.modern.ServeHTTP(w, r)
		return
	}
	// While draining, a client may still resume the stream of a call in
	// flight, but not open a new one.
	if badVersion(w, r) || (r.Header.Get("Last-Event-ID") == "" && h.refuseDraining(w)) {
		return
	}
	if !acceptsSSE(r) {
		http.Error(w, "Not Acceptable: GET needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	sess := h.lookup(w, r)
	if sess == nil {
		return
	}
	sess.begin(h.opts.Now())
	defer func() { sess.end(h.opts.Now()) }()
	conn := newHTTPConn(w)
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		h.resume(w, r, sess, conn, last)
		return
	}
	if err := sess.attachListener(conn); err != nil {
		http.Error(w, "Not Found: session ended", http.StatusNotFound)
		return
	}
	defer sess.detachListener(conn)
	defer conn.release()
	if err := conn.write(func(w http.ResponseWriter) error { writeSSEHeaders(w); return nil }); err != nil {
		return
	}
	h.follow(r, sess, conn)
}

// follow writes to conn what the session is sent as a whole: the frames its
// calls queue (SSE transport) and the notifications mcp-go sends it (such
// as list_changed), with a comment line every keepAlive, until the
// connection, the request or the session ends, or the stream is quiet: it
// carried no message, and the session had nothing else in flight and no
// request, for SessionTTL. Frames queued before the session ended are
// still written.
func (h *HTTP) follow(r *http.Request, sess *httpSession, conn *httpConn) {
	write := func(b []byte) bool {
		return conn.write(func(w http.ResponseWriter) error { _, err := w.Write(b); return err }) == nil
	}
	send := func(b []byte) bool {
		sess.touch(h.opts.Now())
		return write(b)
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	quiet := time.NewTimer(h.opts.SessionTTL)
	defer quiet.Stop()
	for {
		select {
		case b := <-sess.out:
			if !send(b) {
				return
			}
		case n := <-sess.notifications:
			if b, err := encodeFrame(n); err == nil && !send(b) {
				return
			}
		case <-tick.C:
			if !write([]byte(": keepalive\n\n")) {
				return
			}
		case <-quiet.C:
			left := sess.quietLeft(h.opts.Now(), h.opts.SessionTTL)
			if left <= 0 {
				h.logger.Debug("closing a quiet stream", "mcp_session", session.LogHandle(sess.id), "after", h.opts.SessionTTL)
				return
			}
			quiet.Reset(left)
		case <-sess.done:
			for {
				select {
				case b := <-sess.out:
					if !write(b) {
						return
					}
				default:
					return
				}
			}
		case <-conn.done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// resume replays a response stream after the event last and follows it
// until its response was written.
func (h *HTTP) resume(w http.ResponseWriter, r *http.Request, sess *httpSession, conn *httpConn, last string) {
	id, seq, ok := parseEventID(last)
	var st *stream
	if ok {
		st = sess.stream(id)
	}
	if st == nil {
		http.Error(w, "Not Found: unknown Last-Event-ID", http.StatusNotFound)
		return
	}
	if !st.resume(conn, seq) {
		return
	}
	select {
	case <-conn.done:
	case <-r.Context().Done():
		st.detachIf(conn)
	}
}

// delete ends the session.
func (h *HTTP) delete(w http.ResponseWriter, r *http.Request) {
	if modernHeader(r) {
		h.modern.ServeHTTP(w, r)
		return
	}
	if badVersion(w, r) {
		return
	}
	sess := h.lookup(w, r)
	if sess == nil {
		return
	}
	h.endSession(sess, endDeleted)
	w.WriteHeader(http.StatusNoContent)
}

// modernWriter is the response of a request of the 2026-07-28 era, which
// mcp-go's handler writes. A call that overruns its deadline is answered
// through it (answer) before mcp-go has the response: as JSON or, when
// mcp-go has begun a stream of events (the call sent a notification), as
// the stream's last event. What is written after is dropped.
type modernWriter struct {
	http.ResponseWriter
	mu       sync.Mutex
	began    bool // the status was written
	stream   bool // as a stream of events
	answered bool
}

func (w *modernWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered && !w.began {
		w.began = true
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *modernWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answered {
		return len(b), nil
	}
	w.began = true
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, by which mcp-go knows it may stream.
func (w *modernWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the response.
func (w *modernWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish ends the response as the handler returns: an answer in progress
// is written before, and nothing is written after.
func (w *modernWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answered = true
}

// answer writes resp, the answer to a call that overran its deadline, and
// drops what is written after.
func (w *modernWriter) answer(resp mcp.JSONRPCMessage) {
	data, err := json.Marshal(resp)
	if err != nil {
		data, _ = json.Marshal(errorResponse(nil, mcp.INTERNAL_ERROR, "Internal error: response cannot be encoded"))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answered {
		return
	}
	w.answered = true
	if w.stream {
		_, _ = fmt.Fprintf(w.ResponseWriter, "event: message\ndata: %s\n\n", data)
	} else {
		if !w.began {
			// Its length lets the client read it whole while the handler
			// runs on.
			// The handler keeps the connection: the client must not wait
			// for it with its next request.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Header().Set("Connection", "close")
			w.ResponseWriter.WriteHeader(http.StatusOK)
		}
		_, _ = w.ResponseWriter.Write(data)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}
