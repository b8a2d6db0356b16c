package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
)

// DefaultSessionTTL is how long a session named by a handle alone may be
// idle when Options.SessionTTL is zero.
const DefaultSessionTTL = 30 * time.Minute

// ErrUnknownSession is the error for a handle that names no session the
// caller may use: malformed, never minted, expired, ended or bound to
// another principal alike, so that the answer tells nothing about which.
// The client reads UnknownSessionMessage.
var ErrUnknownSession = errors.New("unknown session")

// ErrNoSession is the error for a call that reads session state and names
// no session, on a connection that has none (a 2026-07-28 request over
// HTTP). The client reads NoSessionMessage.
var ErrNoSession = errors.New("no session")

// What the client reads for ErrUnknownSession and ErrNoSession.
const (
	UnknownSessionMessage = "Unknown session; start a new one by calling without 'session'."
	NoSessionMessage      = "No session to read: pass 'session' with the handle from the 'Session:' line of an earlier result, or start a session with a call that changes state."
)

// sessionMessage returns what the client reads when finding its session
// failed with err, or "" for a failure of the server's own.
func sessionMessage(err error) string {
	switch {
	case errors.Is(err, ErrUnknownSession):
		return UnknownSessionMessage
	case errors.Is(err, ErrNoSession):
		return NoSessionMessage
	}
	return ""
}

// handleRE is the shape of a handle: the server mints "s_" and 26 base32
// characters; --session may name one with up to 128 letters, digits, '-'
// and '_'.
var handleRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// newHandle returns a fresh handle: "s_" and 26 base32 characters, 130 bits
// from crypto/rand.
func newHandle() string { return "s_" + rand.Text() }

// CheckSessionName reports whether name may name a session (the --session
// flag): 1 to 128 letters, digits, '-' or '_', the first a letter or digit.
// Every handle the server mints has that shape.
func CheckSessionName(name string) error {
	if !handleRE.MatchString(name) {
		return fmt.Errorf("%q is not a session name: use 1 to 128 letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	return nil
}

type sessionNameKey struct{}

// WithSessionName returns ctx naming the implicit session of the
// connection its requests arrive on: the connection's first request
// resumes the session called name, or starts it under that name. A stdio
// transport sets it on every request (--session); without it a
// connection's session gets a fresh handle.
func WithSessionName(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, sessionNameKey{}, name)
}

// Sessions holds the server's sessions by handle, and the implicit session
// of each client connection. It is the one place that knows where sessions
// live: today a map in this process's memory, from handle to entry, which
// mint adds to, resolve reads (checking the principal and the idle time)
// and forget removes from; the sweep and Len read it too. A durable store
// (package store) takes the map's place behind those methods: mint creates
// the session's head (a name taken is the store's ErrExists), resolve
// loads the head on the session's first use in this process and checks the
// principal and time recorded in it, forget deletes it, and the sweep
// becomes the store's Expire. What belongs to this process stays here:
// which session is which connection's, and how many requests use each.
//
// A session named by a handle alone ends when it has been idle for the
// TTL; the implicit session of a connection ends with the connection
// (mcp-go unregisters its client session).
type Sessions struct {
	registry *session.Registry
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex
	handles map[string]*entry // every live session, by handle
	conns   map[string]*entry // implicit sessions, by client session ID
	// registered holds the client sessions registered with mcp-go: the
	// connections (a stdio process, an Mcp-Session-Id, an SSE stream).
	// A request of the 2026-07-28 era over HTTP has a client session of
	// its own that is never registered.
	registered map[string]bool
	sweeper    *time.Timer
}

// entry is one live session and what Sessions knows about its use.
type entry struct {
	handle string
	sess   *session.Session
	owner  string // the principal it is bound to
	conn   string // the client session whose implicit session it is, or ""
	inUse  int    // requests using it now
	used   time.Time
	ended  bool // forgotten while in use: closed by the last release
}

func newSessions(r *session.Registry, ttl time.Duration, now func() time.Time) *Sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &Sessions{
		registry:   r,
		ttl:        ttl,
		now:        now,
		handles:    map[string]*entry{},
		conns:      map[string]*entry{},
		registered: map[string]bool{},
	}
}

// mint starts a session bound to owner under a fresh handle, or under name
// when it is not empty (the caller makes sure it names no live session),
// and returns it in use. The caller holds m.mu.
func (m *Sessions) mint(name, owner string) (*entry, error) {
	h := name
	if h == "" {
		h = newHandle() // 130 random bits: never one in use
	}
	s, err := m.registry.NewSession(h)
	if err != nil {
		return nil, err
	}
	e := &entry{handle: h, sess: s, owner: owner, inUse: 1, used: m.now()}
	m.handles[h] = e
	return e, nil
}

// resolve returns the session named h, in use, if owner may use it. The
// caller holds m.mu.
func (m *Sessions) resolve(h, owner string) (*entry, error) {
	if !handleRE.MatchString(h) {
		return nil, ErrUnknownSession
	}
	e := m.handles[h]
	if e == nil || e.owner != owner {
		return nil, ErrUnknownSession
	}
	if m.expired(e, m.now()) {
		m.forget(e)
		return nil, ErrUnknownSession
	}
	e.inUse++
	e.used = m.now()
	return e, nil
}

// forget ends e: it is removed at once and closed once no request uses it.
// The caller holds m.mu.
func (m *Sessions) forget(e *entry) {
	if m.handles[e.handle] != e {
		return
	}
	delete(m.handles, e.handle)
	if e.conn != "" && m.conns[e.conn] == e {
		delete(m.conns, e.conn)
	}
	e.ended = true
	if e.inUse == 0 {
		_ = e.sess.Close()
	}
}

// release ends a request's use of e.
func (m *Sessions) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.inUse--
	e.used = m.now()
	if e.ended && e.inUse == 0 {
		_ = e.sess.Close()
	}
}

// expired reports whether e, a session named by its handle alone, has been
// idle for longer than the TTL.
func (m *Sessions) expired(e *entry, now time.Time) bool {
	return e.conn == "" && e.inUse == 0 && now.Sub(e.used) > m.ttl
}

// connection returns, in use, the implicit session of the client session
// id, starting it bound to owner (under name, when not empty) on first use.
// Whoever may send on a connection uses its session: the transport decides
// who may (an Mcp-Session-Id is as hard to guess as a handle); the binding
// to owner applies when the session's handle is presented.
func (m *Sessions) connection(id, owner, name string) (*entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.conns[id]; e != nil {
		e.inUse++
		e.used = m.now()
		return e, nil
	}
	var e *entry
	var err error
	if m.handles[name] != nil {
		e, err = m.resolve(name, owner)
	} else {
		e, err = m.mint(name, owner)
	}
	if err != nil {
		return nil, err
	}
	e.conn = id
	m.conns[id] = e
	return e, nil
}

// sweep ends the sessions named by their handles alone that have been idle
// for longer than the TTL, and sets itself to run again when the next one
// would expire.
func (m *Sessions) sweep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var next time.Time
	for _, e := range m.handles {
		switch {
		case e.conn != "": // it ends with its connection
		case m.expired(e, now):
			m.forget(e)
		case next.IsZero() || e.used.Before(next):
			next = e.used
		}
	}
	m.sweeper = nil
	if !next.IsZero() {
		m.sweeper = time.AfterFunc(next.Add(m.ttl).Sub(now)+time.Second, m.sweep)
	}
}

// register records that the client session id is a connection.
func (m *Sessions) register(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registered[id] = true
}

// End ends the implicit session of the client session id, which has gone.
func (m *Sessions) End(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.registered, id)
	if e := m.conns[id]; e != nil {
		m.forget(e)
	}
}

// Get returns the implicit session of the client session id, starting it
// if needed, whoever it is bound to. It is for tests that look at a
// client's state.
func (m *Sessions) Get(id string) (*session.Session, error) {
	m.mu.Lock()
	e := m.conns[id]
	m.mu.Unlock()
	if e == nil {
		var err error
		if e, err = m.connection(id, "", ""); err != nil {
			return nil, err
		}
		m.release(e)
	}
	return e.sess, nil
}

// Len returns the number of live sessions.
func (m *Sessions) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.handles)
}

// need says what a request does when it names no session and its
// connection has none.
type need int

const (
	// needExisting: refuse it with ErrNoSession (a read of session state).
	needExisting need = iota
	// needNew: start a session under a fresh handle (a call that changes
	// state).
	needNew
	// needAny: run it in an empty session of its own (a stateless tool, a
	// resource or prompt).
	needAny
)

// use is a request's session: its handle ("" for a session of the
// request's own), whether the request started it, and the release the
// request calls when done.
type use struct {
	sess    *session.Session
	handle  string
	minted  bool
	release func()
}

// forRequest returns the session of a request that named handle ("" for
// none), in this order: the session handle names, if the request's
// principal may use it; the implicit session of the request's connection
// (its client session: a stdio process serves every protocol version, a
// legacy HTTP or SSE session its own requests; a 2026-07-28 request over
// HTTP has none); otherwise what n says.
func (m *Sessions) forRequest(ctx context.Context, handle string, n need) (use, error) {
	id, _ := identity.From(ctx)
	owner := id.Principal()
	var e *entry
	var err error
	minted := false
	switch cs := mcpserver.ClientSessionFromContext(ctx); {
	case handle != "":
		m.mu.Lock()
		e, err = m.resolve(handle, owner)
		m.mu.Unlock()
	case cs != nil && (!mcpserver.IsModernRequest(ctx) || m.isRegistered(cs.SessionID())):
		name, _ := ctx.Value(sessionNameKey{}).(string)
		e, err = m.connection(cs.SessionID(), owner, name)
	case n == needNew:
		m.mu.Lock()
		e, err = m.mint("", owner)
		if err == nil && m.sweeper == nil {
			m.sweeper = time.AfterFunc(m.ttl+time.Second, m.sweep)
		}
		m.mu.Unlock()
		minted = true
	case n == needAny:
		s, err := m.registry.NewSession("request-" + rand.Text())
		if err != nil {
			return use{}, err
		}
		return use{sess: s, release: func() { _ = s.Close() }}, nil
	default:
		return use{}, ErrNoSession
	}
	if err != nil {
		return use{}, err
	}
	return use{sess: e.sess, handle: e.handle, minted: minted, release: func() { m.release(e) }}, nil
}

// discard ends a session a request started and then failed in: nothing
// was kept in it, and its handle was never shown.
func (m *Sessions) discard(handle string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.handles[handle]; e != nil {
		m.forget(e)
	}
}

func (m *Sessions) isRegistered(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered[id]
}
