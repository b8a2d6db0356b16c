package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
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

// ErrTooManySessions is the error for a request that would start a
// session when its principal already holds Options.MaxSessionsPerPrincipal
// in this process. The client reads TooManySessionsMessage.
var ErrTooManySessions = errors.New("too many sessions")

// What the client reads for ErrUnknownSession, ErrNoSession and
// ErrTooManySessions.
const (
	UnknownSessionMessage  = "Unknown session; start a new one by calling without 'session'."
	NoSessionMessage       = "No session to read: pass 'session' with the handle from the 'Session:' line of an earlier result, or start a session with a call that changes state."
	TooManySessionsMessage = "Too many sessions: this client holds as many as the server allows. Continue one by passing 'session' with the handle from the 'Session:' line of an earlier result, or end one; an idle session ends by itself after the session TTL."
)

// sessionMessage returns what the client reads when finding its session
// failed with err, or "" for a failure of the server's own.
func sessionMessage(err error) string {
	switch {
	case errors.Is(err, ErrUnknownSession):
		return UnknownSessionMessage
	case errors.Is(err, ErrNoSession):
		return NoSessionMessage
	case errors.Is(err, ErrTooManySessions):
		return TooManySessionsMessage
	}
	return ""
}

// sessionFailed is the result of a call of t whose session could not be
// found or started: err says why, which may be that the call was
// cancelled or ran out of time meanwhile.
func (s *Server) sessionFailed(t *tools.Tool, err error) *mcp.CallToolResult {
	msg := sessionMessage(err)
	switch {
	case msg != "":
	case errors.Is(err, context.Canceled):
		msg = fmt.Sprintf("Tool '%s' was cancelled.", t.Name())
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("Deadline expired before executing tool '%s'.", t.Name())
	default:
		s.logger.Error("creating a session failed", "err", err)
		msg = fmt.Sprintf("Tool '%s' failed: session unavailable", t.Name())
	}
	return mcp.NewToolResultError(msg)
}

// validHandle reports whether h has the shape of a handle: a name the
// store accepts (1 to 128 letters, digits, '-' and '_') that starts with a
// letter or digit. The server mints "s_" and 26 base32 characters;
// --session may name any such handle.
func validHandle(h string) bool {
	return store.ValidSession(h) && h[0] != '-' && h[0] != '_'
}

// newHandle returns a fresh handle: "s_" and 26 base32 characters, 130 bits
// from crypto/rand.
func newHandle() string { return "s_" + rand.Text() }

// CheckSessionName reports whether name may name a session (the --session
// flag): 1 to 128 letters, digits, '-' or '_', the first a letter or digit.
// Every handle the server mints has that shape.
func CheckSessionName(name string) error {
	if !validHandle(name) {
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
// live: in a store (package store), with a map in this process's memory,
// from handle to entry, as the cache of the revision each was last loaded
// or committed at. mint creates the session's head in the store (a name
// taken is the store's ErrExists); resolve loads the head on the session's
// first use in this process, checks the principal and time recorded in it,
// and decodes the state (package statetree) into a fresh session; a call
// that changed state commits it (commit); forget deletes it (an expired
// session, or a new one whose first call failed), except the session a
// stdio process names (--session).
// What belongs to this process stays in memory only: which session is
// which connection's, and how many requests use each.
//
// A session ends when it has been idle for the TTL. The implicit session
// of a connection leaves this process's memory with the connection (mcp-go
// unregisters its client session), and its handle continues it until then.
//
// What the store holds is reclaimed in the background, never on a call's
// path. A session's small state travels in its head (package statetree),
// which the store keeps one of, so that a commit of it leaves nothing
// behind; its blobs (files, large values) are swept once its commits in
// this process have written twice as many as the last sweep kept, and at
// least sweepAfter (one sweep per session at a time): a sweep reads every
// blob of the session and writes again those it keeps (store.Store.Sweep),
// so waiting that long bounds its work to about the blobs written since. Every quarter of the TTL (at least a minute apart), the store
// expires the sessions whose head was last committed longer than the TTL
// ago: those left by processes gone, and those nobody loads again. Only
// commits count as use in the store, so just before, each session live in
// this process that has not committed for half the TTL is touched (its
// unchanged head committed again): a session kept alive here by reads, or
// by a connection that stays open, is never expired under its users.
//
// Several processes (replicas) may share one store. Each watches it while
// it serves (watch.go): when a session held in its memory is committed or
// deleted through another process, it drops its copy, so that the next
// call loads the latest revision, and tells the clients whose
// connection's session it is that its resources may have changed. A
// commit that loses the compare-and-swap all the same (the watch reports
// a change after the fact) drops the copy too, and the call is run again
// or answered with ChangedMessage (see Server).
//
// Close stops the background work and waits for it.
type Sessions struct {
	registry *session.Registry
	store    store.Store
	logger   *slog.Logger
	ttl      time.Duration
	now      func() time.Time
	// retention is how many commits (and checkpoints) each session's
	// history keeps; 0 keeps no history (history.go).
	retention int
	// shared is set when other processes may write to the store (a store
	// with a Shared method that says so): a call then checks, under the
	// session's call lock, that its session is at the store's revision
	// (fresh) before it runs. private is set when the store says that no
	// one else writes to it: it is not watched, as this process sees its
	// every change. (A store without the method, a memory store, may be
	// shared by several servers of this process.)
	shared, private bool

	mu      sync.Mutex
	handles map[string]*entry // every live session, by handle
	// owned counts the live sessions by the principal they are bound to;
	// mint starts none for a principal that holds maxOwned (0: no bound).
	owned    map[string]int
	maxOwned int
	conns    map[string]*entry // implicit sessions, by client session ID
	// registered holds the client sessions registered with mcp-go: the
	// connections (a stdio process, an Mcp-Session-Id, an SSE stream).
	// A request of the 2026-07-28 era over HTTP has a client session of
	// its own that is never registered.
	registered map[string]mcpserver.ClientSession
	sweeper    *time.Timer
	sweeping   map[string]bool // sessions whose blobs are being swept
	closed     bool

	calls *callLog // the sessions' call logs in the store

	// connsOf holds, by handle, the client sessions whose implicit
	// session it names: those told when it changes.
	connsOf map[string][]string
	// listeners holds, by handle, the 2026-07-28 clients listening for
	// changes of the session it names (listen).
	listeners map[string][]mcpserver.ClientSession
	// flights counts the commits of this process in flight, by handle;
	// held keeps the revisions the watch reported for the handle
	// meanwhile, judged once the last has landed.
	flights map[string]int
	held    map[string][]uint64
	mcp     *mcpserver.MCPServer // sends the notifications
	// content reads a resource of a session's state (Server.content);
	// seen holds, by client session ID and URI, the digest of the content
	// a client was last told of or subscribed to, looking orders the
	// reads that record them (notify).
	content func(ctx context.Context, sess *session.Session, uri string) (string, error)
	seen    map[string]map[string][sha256.Size]byte
	looking sync.Mutex

	ctx  context.Context // of the background work, cancelled by Close
	stop context.CancelFunc
	wg   sync.WaitGroup // the background work
}

// sweepAfter is the fewest blobs a session's commits in this process
// write between two sweeps of its blobs.
const sweepAfter = 256

// expirePeriod returns how often the store expires idle sessions under
// ttl.
func expirePeriod(ttl time.Duration) time.Duration { return max(ttl/4, time.Minute) }

// entry is one live session and what Sessions knows about its use.
type entry struct {
	handle string
	sess   *session.Session
	owner  string // the principal it is bound to
	conn   string // the client session whose implicit session it is, or ""
	inUse  int    // requests using it now
	used   time.Time
	ended  bool // forgotten while in use: closed by the last release
	named  bool // named by the process (--session): kept in the store when it ends

	// Under the session's call lock: the revision of the stored head and
	// the state it holds (nil while the head holds none, when empty is
	// the root of the session as it started). rev is written under m.mu
	// too, for the watch, and so is mine: whether this process wrote
	// revision rev (created or committed it) rather than loaded it.
	rev   uint64
	mine  bool
	state *statetree.State
	empty string
	// Also under the call lock: when the head was last committed, and
	// the blobs written since the last sweep of the session's blobs
	// started; kept is how many blobs that sweep kept (under m.mu).
	stored  time.Time
	written int
	kept    int
	// Also under the call lock, with a history (history.go): the hash of
	// the blob of the history the head names ("" for none), the history
	// (nil until read), and, until the first commit, the blobs of the
	// empty state, which the first record goes back to.
	histHash   string
	hist       *historyDoc
	emptyBlobs map[string][]byte
	// docStored says whether the root document of state is stored as a
	// blob too, as the history's records need the states they name.
	docStored bool
}

func newSessions(r *session.Registry, st store.Store, logger *slog.Logger, ttl time.Duration, maxOwned, retention int, now func() time.Time) *Sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	ctx, stop := context.WithCancel(context.Background())
	sh, ok := st.(interface{ Shared() bool })
	return &Sessions{
		shared:     ok && sh.Shared(),
		private:    ok && !sh.Shared(),
		registry:   r,
		store:      st,
		logger:     logger,
		ttl:        ttl,
		now:        now,
		retention:  retention,
		handles:    map[string]*entry{},
		owned:      map[string]int{},
		maxOwned:   maxOwned,
		conns:      map[string]*entry{},
		registered: map[string]mcpserver.ClientSession{},
		connsOf:    map[string][]string{},
		listeners:  map[string][]mcpserver.ClientSession{},
		seen:       map[string]map[string][sha256.Size]byte{},
		flights:    map[string]int{},
		held:       map[string][]uint64{},
		sweeping:   map[string]bool{},
		calls:      newCallLog(st, logger),
		ctx:        ctx,
		stop:       stop,
	}
}

// mint starts a session bound to owner under a fresh handle, or under name
// when it is not empty (the caller makes sure it names no stored session),
// creates it in the store, and returns it in use. The caller holds m.mu.
func (m *Sessions) mint(ctx context.Context, name, owner string) (*entry, error) {
	if m.maxOwned > 0 && m.owned[owner] >= m.maxOwned {
		m.logger.Warn("a principal holds the most sessions allowed; starting none", "principal", owner, "sessions", m.owned[owner])
		return nil, ErrTooManySessions
	}
	h := name
	if h == "" {
		h = newHandle() // 130 random bits: never one in use
	}
	e, err := m.newEntry(h, owner)
	if err != nil {
		return nil, err
	}
	if e.rev, err = m.store.Create(ctx, h, head{Owner: owner}.marshal()); err != nil {
		_ = e.sess.Close()
		return nil, fmt.Errorf("creating session %s: %w", h, err)
	}
	e.mine = true
	m.hold(e)
	return e, nil
}

// newEntry returns a fresh session called h bound to owner, in use, with
// the root of its empty state.
func (m *Sessions) newEntry(h, owner string) (*entry, error) {
	s, err := m.registry.NewSession(h)
	if err != nil {
		return nil, err
	}
	st, blobs, err := statetree.Encode(s, nil)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	now := m.now()
	e := &entry{handle: h, sess: s, owner: owner, inUse: 1, used: now, stored: now, empty: st.Root}
	if m.retention > 0 {
		// The history's first record goes back to it: it is stored with
		// the first commit, its root document as a blob.
		if blobs == nil {
			blobs = map[string][]byte{}
		}
		blobs[st.Root] = st.Doc
		e.emptyBlobs = blobs
	}
	return e, nil
}

// load returns, in use, the stored session h decoded into a fresh session,
// if owner may use it; store.ErrNotFound if there is none or it has been
// idle for longer than the TTL (it is then deleted). The caller holds
// m.mu.
func (m *Sessions) load(ctx context.Context, h, owner string) (*entry, error) {
	e, err := m.decode(ctx, h, owner)
	if err != nil {
		return nil, err
	}
	m.hold(e)
	return e, nil
}

// decode is load without making the session live: the entry it returns is
// the caller's alone.
func (m *Sessions) decode(ctx context.Context, h, owner string) (*entry, error) {
	sh, err := m.store.Load(ctx, h)
	if err != nil {
		return nil, err
	}
	hd, err := readHead(h, sh.Data)
	if err != nil {
		return nil, err
	}
	if hd.Owner != owner {
		return nil, ErrUnknownSession
	}
	if m.now().Sub(sh.Time) > m.ttl {
		m.deleteStored(h)
		return nil, fmt.Errorf("session %s expired: %w", h, store.ErrNotFound)
	}
	e, err := m.newEntry(h, owner)
	if err != nil {
		return nil, err
	}
	e.rev, e.stored, e.histHash = sh.Rev, sh.Time, hd.History
	if hd.Doc != nil {
		e.emptyBlobs = nil
		get := func(hash string) ([]byte, error) {
			// Files of a workspace load on first read, after this request.
			return m.store.Blob(context.Background(), h, hash)
		}
		if e.state, err = statetree.Decode(e.sess, hd.Doc, get); err != nil {
			_ = e.sess.Close()
			return nil, fmt.Errorf("session %s: %w", h, err)
		}
	}
	return e, nil
}

// hold makes e a live session. The caller holds m.mu.
func (m *Sessions) hold(e *entry) {
	m.handles[e.handle] = e
	m.owned[e.owner]++
}

// deleteStored deletes the session h from the store, with its call log.
func (m *Sessions) deleteStored(h string) {
	m.calls.drop(h)
	if err := m.store.Delete(context.Background(), h); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.logger.Error("deleting a session from the store failed", "session", h, "err", err)
	}
}

// resolve returns the session named h, in use, if owner may use it,
// loading it from the store on its first use in this process. The caller
// holds m.mu.
func (m *Sessions) resolve(ctx context.Context, h, owner string) (*entry, error) {
	if !validHandle(h) {
		return nil, ErrUnknownSession
	}
	e := m.handles[h]
	if e == nil {
		e, err := m.load(ctx, h, owner)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrUnknownSession
		}
		return e, err
	}
	if e.owner != owner {
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

// forget ends e: it is removed at once, deleted from the store unless the
// process named it, and closed once no request uses it. The caller holds
// m.mu.
func (m *Sessions) forget(e *entry) {
	if m.handles[e.handle] != e {
		return
	}
	m.evict(e)
	if e.conn != "" && m.conns[e.conn] == e {
		m.unbind(e.conn)
	}
	if !e.named {
		m.deleteStored(e.handle)
	}
}

// evict drops e from memory, leaving the store as it is: the session's
// next use loads it again. The caller holds m.mu.
func (m *Sessions) evict(e *entry) {
	if m.handles[e.handle] == e {
		delete(m.handles, e.handle)
		if m.owned[e.owner]--; m.owned[e.owner] == 0 {
			delete(m.owned, e.owner)
		}
	}
	e.ended = true
	if e.inUse == 0 {
		_ = e.sess.Close()
	}
}

// errChanged is the error of a commit that found the session's head moved
// since this process loaded it; the client reads ChangedMessage.
var errChanged = errors.New("session changed elsewhere")

// errStale is the error of a call that found, before it ran, that another
// process had changed its session since this one loaded it (fresh): the
// call may run again on the latest revision, whatever its tool does.
var errStale = fmt.Errorf("%w before the call ran", errChanged)

// storeError is the error of a commit that the store failed; the client
// reads it.
type storeError struct{ err error }

func (e storeError) Error() string { return StoreDownMessage + e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// What the client reads when a call's commit failed.
const (
	ChangedMessage   = "The session changed elsewhere; call again."
	StoreDownMessage = "Session store unavailable: "
)

// commit stores the state of e after call succeeded: nothing when the
// call changed nothing and asked nothing of the history, otherwise the
// blobs the change needs and a new head (put), with the call's record in
// the session's history, if it keeps one and the call's tool is not
// read-only (such a call changes only the policies' memory). When another
// writer committed first, it returns errChanged. The caller holds the
// session's call lock.
func (m *Sessions) commit(ctx context.Context, e *entry, call *tools.Call) error {
	st, blobs, err := statetree.Encode(e.sess, e.state)
	if err != nil {
		return err
	}
	ch, _ := ctx.Value(historyKey{}).(*callHistory)
	changed := !(e.state == nil && st.Root == e.empty) && !(e.state != nil && st.Root == e.state.Root)
	recorded := m.retention > 0 && call != nil && !call.Tool.Annotations().ReadOnly
	var files []session.FileChange
	if recorded && call.Tx != nil {
		if files, err = call.Tx.Changes(); err != nil {
			return err
		}
	}
	// A change of files outside the state (a disk workspace) is recorded
	// in the history, whatever the state did.
	outside := slices.ContainsFunc(files, func(c session.FileChange) bool { return c.Outside })
	if !changed && !outside && !ch.pending() {
		if e.state != nil {
			e.state = st // the same state, with the values the next call compares against
		}
		return nil // still the state the head holds
	}
	hd := head{Doc: st.Doc, Owner: e.owner, History: e.histHash}
	var hist *historyDoc
	if recorded {
		if blobs == nil {
			blobs = map[string][]byte{}
		}
		// The history names states by their root documents' hashes, and
		// goes back to one by reading its blob.
		blobs[st.Root] = st.Doc
		var hb []byte
		if hist, hb, err = m.nextHistory(ctx, e, call, ch, st, changed || outside, files, blobs); err != nil {
			return err
		}
		hd.History = statetree.Hash(hb)
		blobs[hd.History] = hb
	}
	switch err := m.put(ctx, e, hd.marshal(), blobs); {
	case errors.Is(err, store.ErrConflict):
		return errChanged
	case errors.Is(err, store.ErrNotFound):
		return ErrUnknownSession
	case err != nil:
		return storeError{err}
	}
	e.state, e.stored, e.docStored = st, m.now(), recorded
	e.emptyBlobs = nil
	if hist != nil {
		e.hist, e.histHash = hist, hd.History
	}
	e.written += len(blobs)
	m.startSweep(e, hd)
	return nil
}

// put commits head, and blobs before it, as the next revision of e, by
// compare-and-swap on the revision e holds, and records the revision it
// wrote. A conflict (another writer committed first) drops e from memory,
// so that the next call loads the latest revision. What the watch reports
// of the session meanwhile waits until the commit has landed (see
// changed). The caller holds the session's call lock.
func (m *Sessions) put(ctx context.Context, e *entry, head []byte, blobs map[string][]byte) error {
	m.mu.Lock()
	m.flights[e.handle]++
	m.mu.Unlock()
	rev, err := m.store.Commit(ctx, e.handle, e.rev, head, blobs)
	m.mu.Lock()
	switch {
	case err == nil:
		e.rev, e.mine = rev, true
	case errors.Is(err, store.ErrConflict):
		m.evict(e)
	}
	foreign := m.land(e.handle)
	m.mu.Unlock()
	if foreign {
		m.notify(e.handle, nil)
	}
	return err
}

// startSweep starts sweeping the blobs of e that hd, its head just
// committed, does not use, once its commits have written enough blobs
// since the last sweep (see Sessions), unless a sweep of it is running or
// the sessions are closed. The caller holds the session's call lock.
func (m *Sessions) startSweep(e *entry, hd head) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.written < max(2*e.kept, sweepAfter) || m.closed || m.sweeping[e.handle] {
		return
	}
	e.written = 0
	m.sweeping[e.handle] = true
	m.wg.Add(1)
	go m.sweepBlobs(e, e.rev, hd)
}

// sweepBlobs removes the blobs of e written before rev that hd, its head
// at rev, does not use: its state, and its history with what that keeps.
// Its failure fails no call: the blobs stay until the next sweep.
func (m *Sessions) sweepBlobs(e *entry, rev uint64, hd head) {
	defer m.wg.Done()
	h := e.handle
	kept := -1 // how many it kept, once it has
	defer func() {
		m.mu.Lock()
		delete(m.sweeping, h)
		if kept >= 0 {
			e.kept = kept
		}
		m.mu.Unlock()
	}()
	live, err := statetree.Live(hd.Doc, func(hash string) ([]byte, error) { return m.store.Blob(m.ctx, h, hash) })
	if err == nil {
		err = m.liveHistory(m.ctx, h, hd.History, live)
	}
	n := 0
	if err == nil {
		n, err = m.store.Sweep(m.ctx, h, rev, func(hash string) bool { return live[hash] })
	}
	if err == nil {
		kept = len(live)
	}
	switch {
	case err == nil:
		m.logger.Debug("swept a session's unused blobs", "session", h, "removed", n)
	case errors.Is(err, store.ErrNotFound) || m.ctx.Err() != nil:
		m.logger.Debug("sweeping a session's blobs stopped", "session", h, "err", err)
	default:
		m.logger.Warn("sweeping a session's blobs failed", "session", h, "err", err)
	}
}

// expireEvery has the store expire idle sessions every period until
// Close, touching first the sessions live in this process.
func (m *Sessions) expireEvery(period time.Duration) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-t.C:
				m.expire(m.ctx)
			}
		}
	}()
}

// expire touches every session live in this process that has not expired
// here, then has the store delete the sessions last committed longer than
// the TTL ago.
func (m *Sessions) expire(ctx context.Context) {
	m.mu.Lock()
	now := m.now()
	var live []*entry
	for _, e := range m.handles {
		if !m.expired(e, now) {
			e.inUse++ // kept open while it is touched
			live = append(live, e)
		}
	}
	m.mu.Unlock()
	for _, e := range live {
		m.touch(ctx, e)
		m.mu.Lock()
		m.drop(e)
		m.mu.Unlock()
	}
	n, err := m.store.Expire(ctx, now.Add(-m.ttl))
	switch {
	case err != nil && ctx.Err() == nil:
		m.logger.Warn("expiring idle sessions in the store failed", "err", err)
	case n > 0:
		m.logger.Debug("expired idle sessions in the store", "count", n)
	}
}

// touch commits the unchanged head of e again when it was last committed
// half the TTL ago or longer, so that the store counts e as in use.
func (m *Sessions) touch(ctx context.Context, e *entry) {
	if err := e.sess.Acquire(ctx); err != nil {
		return
	}
	defer e.sess.Release()
	m.mu.Lock()
	ended := e.ended
	m.mu.Unlock()
	if ended || m.now().Sub(e.stored) < m.ttl/2 {
		return
	}
	hd := head{Owner: e.owner, History: e.histHash}
	if e.state != nil {
		hd.Doc = e.state.Doc
	}
	switch err := m.put(ctx, e, hd.marshal(), nil); {
	case errors.Is(err, store.ErrConflict): // committed elsewhere: fresh
	case err != nil:
		m.logger.Warn("touching a session in the store failed", "session", e.handle, "err", err)
	default:
		e.stored = m.now()
	}
}

// close stops the background work on the store and waits for it, and for
// the calls' records to be appended to their logs.
func (m *Sessions) close() {
	m.mu.Lock()
	m.closed = true
	if m.sweeper != nil {
		m.sweeper.Stop()
	}
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
	m.calls.close()
}

// release ends a request's use of e.
func (m *Sessions) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.used = m.now()
	m.drop(e)
}

// drop ends a use of e, closing it if it has ended and was the last. The
// caller holds m.mu.
func (m *Sessions) drop(e *entry) {
	e.inUse--
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
//
// A connection whose session was dropped from memory (its commit met
// another writer's) loads it again.
func (m *Sessions) connection(ctx context.Context, id, owner, name string) (*entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.conns[id]
	if old != nil && !old.ended {
		old.inUse++
		old.used = m.now()
		return old, nil
	}
	if old != nil {
		name = old.handle
	}
	var e *entry
	var err error
	if name == "" {
		e, err = m.mint(ctx, "", owner)
	} else {
		e, err = m.resolve(ctx, name, owner)
		if errors.Is(err, ErrUnknownSession) && m.handles[name] == nil {
			// None stored under the name, or gone: start it.
			if _, lerr := m.store.Load(ctx, name); errors.Is(lerr, store.ErrNotFound) {
				e, err = m.mint(ctx, name, owner)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	e.conn = id
	e.named = name != "" && (old == nil || old.named)
	m.conns[id] = e
	if old == nil {
		m.connsOf[e.handle] = append(m.connsOf[e.handle], id)
	}
	return e, nil
}

// unbind removes the implicit session of the client session id. The
// caller holds m.mu.
func (m *Sessions) unbind(id string) {
	e := m.conns[id]
	if e == nil {
		return
	}
	delete(m.conns, id)
	ids := slices.DeleteFunc(m.connsOf[e.handle], func(c string) bool { return c == id })
	if len(ids) == 0 {
		delete(m.connsOf, e.handle)
	} else {
		m.connsOf[e.handle] = ids
	}
}

// sweep ends the sessions named by their handles alone that have been idle
// for longer than the TTL, and sets itself to run again when the next one
// would expire.
func (m *Sessions) sweep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
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

// register records that the client session cs is a connection.
func (m *Sessions) register(cs mcpserver.ClientSession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registered[cs.SessionID()] = cs
}

// End lets go of the implicit session of the client session id, which
// has gone. When its client ended it (final: an HTTP DELETE), the session
// ends too, with what it stored, unless the process named it (--session).
// Otherwise (this process is stopping, a stream closed, the connection
// idled out) it leaves this process's memory and stays in the store until
// it has been idle for the TTL, for its handle to continue it, here after
// a restart or on another replica.
func (m *Sessions) End(id string, final bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.registered, id)
	delete(m.seen, id)
	if e := m.conns[id]; e != nil {
		m.unbind(id)
		if final {
			m.forget(e)
		} else {
			m.evict(e)
		}
	}
}

type endedKey struct{}

// ClientEnded returns ctx, for mcp-go's UnregisterSession, saying that
// the client ended its session (an HTTP DELETE), so that the session's
// state ends with it (Sessions.End).
func ClientEnded(ctx context.Context) context.Context {
	return context.WithValue(ctx, endedKey{}, true)
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
		if e, err = m.connection(context.Background(), id, "", ""); err != nil {
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

// forRead is forRequest for a read outside the call pipeline (a
// resource): in a store that other processes write, it makes sure that the
// session is the store's latest revision (use.fresh), loading it again
// when another process changed it.
func (m *Sessions) forRead(ctx context.Context, handle string, n need) (use, error) {
	for run := 1; ; run++ {
		u, err := m.forRequest(ctx, handle, n)
		if err != nil || u.fresh == nil {
			return u, err
		}
		if err = u.fresh(ctx); err == nil {
			return u, nil
		}
		u.release()
		if !errors.Is(err, errStale) || run == maxRuns {
			return use{}, err
		}
	}
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
	// commit stores the session's state after a call that succeeded; nil
	// for a session of the request's own.
	commit func(context.Context, *tools.Call) error
	// history is the call's part in the session's history; nil when the
	// sessions keep none, and for a session of the request's own.
	history *callHistory
	// fresh checks, before the call runs, that no other process changed
	// the session since this one loaded or last committed it; nil when
	// the store is this process's alone.
	fresh func(context.Context) error
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
		e, err = m.resolve(ctx, handle, owner)
		m.mu.Unlock()
	case cs != nil && (!mcpserver.IsModernRequest(ctx) || m.isRegistered(cs.SessionID())):
		name, _ := ctx.Value(sessionNameKey{}).(string)
		e, err = m.connection(ctx, cs.SessionID(), owner, name)
	case n == needNew:
		m.mu.Lock()
		e, err = m.mint(ctx, "", owner)
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
	u := use{
		sess: e.sess, handle: e.handle, minted: minted,
		release: func() { m.release(e) },
		commit:  func(ctx context.Context, call *tools.Call) error { return m.commit(ctx, e, call) },
	}
	if m.retention > 0 {
		u.history = &callHistory{m: m, e: e}
	}
	if m.shared && !minted {
		u.fresh = func(ctx context.Context) error { return m.fresh(ctx, e) }
	}
	return u, nil
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
	return m.registered[id] != nil
}
