package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errConnGone is returned by writes to a connection that was released.
var errConnGone = errors.New("transport: connection gone")

// httpConn is the write side of one HTTP response that a handler goroutine
// keeps open while other goroutines write to it. Writes are serialised;
// after release nothing is written and the handler may return.
type httpConn struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	gone bool
	done chan struct{}
	once sync.Once
}

func newHTTPConn(w http.ResponseWriter) *httpConn {
	return &httpConn{w: w, rc: http.NewResponseController(w), done: make(chan struct{})}
}

// write runs fn with the response writer unless the connection is gone,
// then flushes. A failed write releases the connection.
func (c *httpConn) write(fn func(w http.ResponseWriter) error) error {
	return c.writeFlush(fn, true)
}

// writeFlush is write, flushing only when flush is set (a response that
// ends with the handler is flushed by net/http, in one write).
func (c *httpConn) writeFlush(fn func(w http.ResponseWriter) error, flush bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return errConnGone
	}
	err := fn(c.w)
	if err == nil && flush {
		err = c.rc.Flush()
	}
	if err != nil {
		c.gone = true
		c.once.Do(func() { close(c.done) })
	}
	return err
}

// release stops all writes (waiting for one in progress) and lets the
// handler return.
func (c *httpConn) release() {
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
	c.once.Do(func() { close(c.done) })
}

// end releases the connection and ends its response now, while the
// handler goes on running a call: over HTTP/1.x it takes the connection
// over from net/http, ends a chunked body and closes it, so that the
// client sees the stream end. Where that cannot be done (HTTP/2), the
// response ends when the handler returns.
func (c *httpConn) end(chunked bool) {
	c.release()
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, buf, err := c.rc.Hijack()
	if err != nil {
		return
	}
	if chunked {
		_, _ = buf.WriteString("0\r\n\r\n")
		_ = buf.Flush()
	}
	_ = conn.Close()
}

// writeSSEHeaders starts an SSE response.
func writeSSEHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// frame returns one SSE message event: an optional id, and data, a JSON
// message.
func frame(id string, data []byte) []byte {
	if id != "" {
		return fmt.Appendf(nil, "id: %s\nevent: message\ndata: %s\n\n", id, data)
	}
	return fmt.Appendf(nil, "event: message\ndata: %s\n\n", data)
}

// encodeFrame encodes msg as an SSE message event without id.
func encodeFrame(msg any) ([]byte, error) {
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, &encodeError{err: err}
	}
	return frame("", data), nil
}

// maxStreamEvents bounds the events a stream keeps for replay; the oldest
// are dropped first.
const maxStreamEvents = 1024

// event is one recorded event of a stream.
type event struct {
	seq  int
	data []byte
}

// stream is a resumable SSE response stream: the response of one
// Streamable HTTP request, whose events are recorded so that a client that
// lost the connection, or whose connection the server closed (polling),
// can reconnect with GET and Last-Event-ID and get the rest.
//
// Event IDs are "<stream>_<n>". The first event, n = 0, is the priming
// event: an ID and a retry time, no data. Writes to the attached connection
// happen under mu, so replay and live delivery cannot interleave: an event
// reaches a resuming client through the replay or live afterwards, never
// both and never neither.
type stream struct {
	id    string
	sess  *httpSession
	retry time.Duration

	mu       sync.Mutex
	events   []event
	next     int
	conn     *httpConn
	complete bool // the last event (the response) is recorded
}

func (st *stream) eventID(seq int) string { return st.id + "_" + strconv.Itoa(seq) }

// parseEventID splits a Last-Event-ID into stream ID and sequence number.
func parseEventID(id string) (string, int, bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return id[:i], n, true
}

// attach writes the SSE headers and the priming event to c and makes it
// the stream's connection.
func (st *stream) attach(c *httpConn) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.next = 1
	err := c.write(func(w http.ResponseWriter) error {
		writeSSEHeaders(w)
		_, err := fmt.Fprintf(w, "id: %s\nretry: %d\ndata: \n\n", st.eventID(0), st.retry.Milliseconds())
		return err
	})
	if err == nil {
		st.conn = c
	}
	return err
}

// deliver records msg and writes it to the attached connection, if any. The
// last message completes the stream: its connection is released after it,
// and once it has reached a connection the stream is forgotten.
func (st *stream) deliver(msg any, last bool) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return &encodeError{err: err}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.complete {
		return errNoStream
	}
	ev := event{seq: st.next, data: data}
	st.next++
	st.events = append(st.events, ev)
	if len(st.events) > maxStreamEvents {
		st.events = st.events[1:]
	}
	st.complete = last
	if st.conn == nil {
		return nil
	}
	if err := st.conn.write(func(w http.ResponseWriter) error { _, err := w.Write(frame(st.eventID(ev.seq), ev.data)); return err }); err != nil {
		st.conn = nil
		return nil // recorded; the client may resume
	}
	if last {
		st.conn.release()
		st.conn = nil
		st.sess.dropStream(st.id)
	}
	return nil
}

// resume replays the events after seq to c and, unless the stream is
// complete, makes c its connection (superseding any other). It reports
// whether c was attached.
func (st *stream) resume(c *httpConn, after int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conn != nil {
		st.conn.release()
		st.conn = nil
	}
	err := c.write(func(w http.ResponseWriter) error {
		writeSSEHeaders(w)
		for _, ev := range st.events {
			if ev.seq <= after {
				continue
			}
			if _, err := w.Write(frame(st.eventID(ev.seq), ev.data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false
	}
	if st.complete {
		c.release()
		st.sess.dropStream(st.id)
		return false
	}
	st.conn = c
	return true
}

// detach releases the attached connection, if any; later events are only
// recorded.
func (st *stream) detach() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conn != nil {
		st.conn.release()
		st.conn = nil
	}
}

// detachIf releases c if it is still the attached connection.
func (st *stream) detachIf(c *httpConn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conn == c {
		st.conn = nil
	}
	c.release()
}
