package transport

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// errSessionEnded is returned by server→client requests of a session that
// ended (DELETE, idle expiry, shutdown, or its SSE connection closed).
var errSessionEnded = errors.New("transport: session ended")

// errNoStream is returned by server→client requests and notifications of a
// request whose response cannot carry them: the client did not accept an
// SSE response, or the response was already sent.
var errNoStream = errors.New("transport: the request's response cannot carry messages to the client")

// httpSession is one client session of the HTTP transports: an
// Mcp-Session-Id of Streamable HTTP, or one connection of the SSE
// transport. It is the mcp-go client session registered for it, holds the
// client's identity, log level and resource subscriptions, and routes the
// client's replies to server→client requests.
//
// Requests do not see it directly: each is handled with a requestSession,
// which shares this state but has its own notification channel and its own
// way to the client, so that a request's notifications and server→client
// requests travel on that request's response, in order, before it.
type httpSession struct {
	id string

	// notifications receives notifications mcp-go sends to the session as
	// a whole (not from a request); the standalone stream (Streamable HTTP
	// GET) or the connection (SSE) writes them.
	notifications chan mcp.JSONRPCNotification
	// out queues the frames of the SSE connection; it is nil for a session
	// of Streamable HTTP.
	out chan []byte

	clientState

	lastActive atomic.Int64 // unix nanoseconds
	active     atomic.Int64 // requests in flight and connections attached

	subscriptions
	pendingRequests

	mu       sync.Mutex
	streams  map[string]*stream // resumable response streams by ID
	order    []string           // stream IDs, oldest first
	listener *httpConn          // the attached standalone stream (GET), if any
	closed   bool
	done     chan struct{}

	// ctx is the parent of the session's calls' contexts; it is cancelled
	// when the session ends.
	ctx    context.Context
	cancel context.CancelFunc
}

var (
	_ server.ClientSession                    = (*httpSession)(nil)
	_ server.SessionWithLogging               = (*httpSession)(nil)
	_ server.SessionWithClientInfo            = (*httpSession)(nil)
	_ server.SessionWithProtocolVersion       = (*httpSession)(nil)
	_ server.SessionWithResourceSubscriptions = (*httpSession)(nil)
)

// sessionNotificationBuffer is the capacity of an HTTP session's channel of
// session-wide notifications. A connection attached drains it as they come,
// and every session holds one, so it is smaller than a request's
// (notificationBuffer): 64 entries are 3 KB, 1,024 were 48 KB a session.
const sessionNotificationBuffer = 64

func newHTTPSession(base context.Context, id string, now time.Time) *httpSession {
	s := &httpSession{
		id:            id,
		notifications: make(chan mcp.JSONRPCNotification, sessionNotificationBuffer),
		streams:       map[string]*stream{},
		done:          make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(base)
	s.lastActive.Store(now.UnixNano())
	return s
}

// SessionID returns the session's ID.
func (s *httpSession) SessionID() string { return s.id }

// NotificationChannel returns the channel of session-wide notifications.
func (s *httpSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// touch records activity now.
func (s *httpSession) touch(now time.Time) { s.lastActive.Store(now.UnixNano()) }

// begin marks the start of a request or an attached connection; end, its
// end. A session with either is never idle.
func (s *httpSession) begin(now time.Time) { s.active.Add(1); s.touch(now) }
func (s *httpSession) end(now time.Time)   { s.touch(now); s.active.Add(-1) }

// idle reports whether the session has had nothing in flight and nothing
// attached since before cutoff.
func (s *httpSession) idle(cutoff time.Time) bool {
	return s.active.Load() == 0 && s.lastActive.Load() < cutoff.UnixNano()
}

// quietLeft returns how long, from now, until a stream attached to the
// session has been quiet for ttl: nothing else in flight and no activity;
// zero or less when it has. With something else in flight it is ttl.
func (s *httpSession) quietLeft(now time.Time, ttl time.Duration) time.Duration {
	if s.active.Load() > 1 {
		return ttl
	}
	return ttl - now.Sub(time.Unix(0, s.lastActive.Load()))
}

// close ends the session: pending server→client requests fail, attached
// connections are released, and queued frames are dropped. It reports
// false if the session was already closed.
func (s *httpSession) close() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	streams := s.streams
	s.streams, s.order = map[string]*stream{}, nil
	listener := s.listener
	s.listener = nil
	s.mu.Unlock()
	s.fail(errSessionEnded)
	close(s.done)
	s.cancel()
	for _, st := range streams {
		st.detach()
	}
	if listener != nil {
		listener.release()
	}
	return true
}

// attachListener makes c the session's standalone stream, superseding the
// previous one. It fails once the session is closed.
func (s *httpSession) attachListener(c *httpConn) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errSessionEnded
	}
	old := s.listener
	s.listener = c
	s.mu.Unlock()
	if old != nil {
		old.release()
	}
	return nil
}

// detachListener forgets c if it is still the standalone stream.
func (s *httpSession) detachListener(c *httpConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == c {
		s.listener = nil
	}
}

// maxStreams bounds the resumable streams a session keeps; the oldest are
// forgotten first.
const maxStreams = 64

// newStream creates and records a resumable response stream.
func (s *httpSession) newStream(retry time.Duration) *stream {
	st := &stream{id: rand.Text(), sess: s, retry: retry}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		st.complete = true
		return st
	}
	s.streams[st.id] = st
	s.order = append(s.order, st.id)
	for len(s.order) > maxStreams {
		old := s.order[0]
		s.order = s.order[1:]
		if o := s.streams[old]; o != nil {
			delete(s.streams, old)
			go o.detach()
		}
	}
	return st
}

// stream returns the resumable stream called id.
func (s *httpSession) stream(id string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// dropStream forgets a stream whose last event reached the client.
func (s *httpSession) dropStream(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, id)
	s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == id })
}

// requestSession is the client session as one request sees it: the
// session's state, with a notification channel and a way to the client of
// its own (the request's response). mcp-go finds it in the request's
// context, so everything the request's handler sends goes through pump,
// which writes it to the response in order, before the response itself.
type requestSession struct {
	*httpSession
	clientRequests
	pump *requestPump
}

var (
	_ server.SessionWithSampling    = (*requestSession)(nil)
	_ server.SessionWithElicitation = (*requestSession)(nil)
	_ server.SessionWithRoots       = (*requestSession)(nil)
)

// NotificationChannel returns the request's own notification channel.
func (r *requestSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return r.pump.channel()
}

// call sends a request to the client on the request's response and waits
// for the client's reply, ctx, or the end of the session.
func (r *requestSession) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return r.roundTrip(ctx, method, params, func(req outgoingRequest) error { return r.pump.send(ctx, req) })
}

// sink is where a request's messages go: its response (Streamable HTTP) or
// the session's connection (SSE).
type sink interface {
	// send writes a notification or a server→client request.
	send(msg any) error
	// finish writes the response; nothing is sent after it.
	finish(resp mcp.JSONRPCMessage)
	// closeStream ends the connection that carries the request's messages,
	// if it has one of its own; the rest is kept for the client to resume.
	closeStream()
	// closing has the connection of the request's own, if any, closed
	// after the response: the call's handler runs on (Reply).
	closing()
}

// closeStream is the pump request of tools.Client.CloseStream: close the
// connection after everything sent before it.
type closeStream struct{}

// requestPump is the single writer of one request's messages. mcp-go puts
// the request's notifications on its channel; the handler's server→client
// requests and, at the end, the response come through the other two. Before
// it writes a request or the response it writes every notification already
// queued, and it is the only receiver of the channel, so a notification sent
// before a request or before the handler returned is always written before
// it.
//
// The pump starts (its channels and goroutine) when the request first sends
// something to the client. A request that sends nothing, as most do, costs
// neither, and its response is written by the goroutine that handled it.
// After the response nothing starts it any more: a notification sent by a
// goroutine that outlived its call finds no channel and is dropped, never
// delivered to another request.
type requestPump struct {
	sink sink
	once sync.Once

	notifications chan mcp.JSONRPCNotification
	requests      chan pumpRequest
	final         chan mcp.JSONRPCMessage
	done          chan struct{}
}

type pumpRequest struct {
	msg  any
	sent chan error
}

func newRequestPump(s sink) *requestPump { return &requestPump{sink: s} }

// start starts the pump, unless it started or finished already.
func (p *requestPump) start() {
	p.once.Do(func() {
		p.notifications = make(chan mcp.JSONRPCNotification, notificationBuffer)
		p.requests = make(chan pumpRequest)
		p.final = make(chan mcp.JSONRPCMessage, 1)
		p.done = make(chan struct{})
		go p.run()
	})
}

// channel returns the notification channel, starting the pump; nil after
// the response.
func (p *requestPump) channel() chan mcp.JSONRPCNotification {
	p.start()
	return p.notifications
}

// finish writes the response after everything sent before it, and waits
// until it has been written.
func (p *requestPump) finish(resp mcp.JSONRPCMessage) {
	started := true
	p.once.Do(func() { started = false })
	if !started {
		p.sink.finish(resp)
		return
	}
	p.final <- resp
	<-p.done
}

// run writes to the sink until the response has been written.
func (p *requestPump) run() {
	defer close(p.done)
	s := p.sink
	for {
		select {
		case n := <-p.notifications:
			_ = s.send(n) // a notification that cannot be delivered is dropped
		case r := <-p.requests:
			p.drain(s)
			if _, ok := r.msg.(closeStream); ok {
				s.closeStream()
				r.sent <- nil
				continue
			}
			r.sent <- s.send(r.msg)
		case resp := <-p.final:
			p.drain(s)
			s.finish(resp)
			return
		}
	}
}

func (p *requestPump) drain(s sink) {
	for {
		select {
		case n := <-p.notifications:
			_ = s.send(n)
		default:
			return
		}
	}
}

// send has the pump write msg and waits until it has.
func (p *requestPump) send(ctx context.Context, msg any) error {
	p.start()
	if p.requests == nil {
		return errNoStream
	}
	r := pumpRequest{msg: msg, sent: make(chan error, 1)}
	select {
	case p.requests <- r:
	case <-p.done:
		return errNoStream
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.sent
}
