package transport

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// sseQueue is the capacity of an SSE connection's frame queue.
const sseQueue = 64

// serveSSE is the legacy HTTP+SSE transport's stream: GET /sse opens a
// session for the life of the connection and announces the endpoint its
// messages are posted to; responses and notifications come back on the
// stream.
func (h *HTTP) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.refuseDraining(w) {
		return
	}
	sess := newHTTPSession(h.base, rand.Text(), h.opts.Now())
	sess.out = make(chan []byte, sseQueue)
	if err := h.addSession(r.Context(), sess); err != nil {
		h.logger.Error("transport: registering a session failed", "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	sess.begin(h.opts.Now()) // a session is never idle while its connection is open
	defer h.endSession(sess, "connection closed")
	defer func() { sess.end(h.opts.Now()) }()

	conn := newHTTPConn(w)
	defer conn.release()
	endpoint := fmt.Sprintf("%s/message?sessionId=%s", h.opts.BasePath, sess.id)
	if err := conn.write(func(w http.ResponseWriter) error {
		writeSSEHeaders(w)
		_, err := fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
		return err
	}); err != nil {
		return
	}
	h.follow(r, sess, conn)
}

// serveMessage takes the messages of an SSE session: POST
// /message?sessionId=ID. Requests are answered 202 at once and handled on
// their own goroutine; their notifications and response go to the
// session's stream, in order.
func (h *HTTP) serveMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	id := r.URL.Query().Get("sessionId")
	if id == "" {
		http.Error(w, "Bad Request: missing sessionId", http.StatusBadRequest)
		return
	}
	sess := h.session(id)
	if sess == nil || sess.out == nil {
		http.Error(w, "Not Found: unknown or ended session", http.StatusNotFound)
		return
	}
	m, ok := readMessage(w, r)
	if !ok {
		return
	}
	if m.Method != "" && m.HasID() && h.refuseDraining(w) {
		return
	}
	if h.answered(w, sess, m) {
		return
	}
	h.calls.Add(1)
	go h.runCall(sess.ctx, r.Context(), sess, &sseSink{sess: sess}, m)
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "Accepted\n")
}

// sseSink queues a request's messages on its session's SSE connection.
type sseSink struct {
	sess *httpSession
}

// closeStream and closing do nothing: the SSE connection is the
// session's, not the request's.
func (s *sseSink) closeStream() {}
func (s *sseSink) closing()     {}

func (s *sseSink) send(msg any) error {
	b, err := encodeFrame(msg)
	if err != nil {
		return err
	}
	select {
	case s.sess.out <- b:
		return nil
	case <-s.sess.done:
		return errSessionEnded
	}
}

func (s *sseSink) finish(resp mcp.JSONRPCMessage) {
	if err := s.send(resp); err != nil {
		var enc *encodeError
		if errors.As(err, &enc) {
			_ = s.send(errorResponse(nil, mcp.INTERNAL_ERROR, "Internal error: response cannot be encoded"))
		}
	}
}
