// Package sessions keeps the server's sessions: where each lives, by
// handle, and how a request finds its own. It knows nothing of MCP: a
// request names a handle, a connection (whose implicit session it
// continues) and its principal (Request), and gets a Use of the session,
// through which its call commits.
//
// # Where sessions live
//
// Every session lives in a store (package store), and the sessions this
// process serves also in its memory, as the cache of the revision each was
// last loaded or committed at. A new session's head is created in the
// store (a name taken is the store's ErrExists); a session first used in
// this process is loaded from its head, its principal and time checked,
// its state decoded (package statetree) into a fresh session.Session. A
// call that changed state commits it, once, at its end (Use.Commit): the
// blobs the change needs, then the head, by compare-and-swap on the
// revision the call started from. A session's small state travels in its
// head, so that a commit that changes only it (a plan) is one write, which
// replaces the last and leaves nothing behind.
//
// A session ends when it has been idle for the TTL: the implicit session
// of a connection leaves this process's memory with the connection (End),
// and its handle continues it until then. An ended session is deleted from
// the store with everything it stored, except the one a process names
// (Request.Name, --session).
//
// # Reclaiming
//
// What the store holds is reclaimed in the background, never on a call's
// path. A session's blobs (files, large values) are swept once its commits
// in this process have written sweepAfter blobs, or sweepAfterBytes, since
// the last sweep (one sweep per session at a time). A sweep costs what
// changed since the last (sweep.go): the process keeps an index of the
// blobs the session's head uses (statetree.Index), which the sweep updates
// from the blobs the commits since wrote, and the store removes by name
// the blobs that only the old head used and those written since that the
// new one does not (store.Store.Remove). The first sweep of a session
// loaded from the store reads what its head uses whole. Once the commits
// have written twice as many blobs as the head uses (fullAfter), a sweep
// also reads the headers of every blob of the session and writes again
// those it keeps (store.Store.Sweep), which removes what no process will,
// such as the blobs of a commit whose process died before its head was
// stored. Every quarter of the TTL (at least a minute apart),
// the store expires the sessions whose head was last committed longer than
// the TTL ago: those left by processes gone, and those nobody loads again.
// Only commits count as use in the store, so just before, each session
// live in this process that has not committed for half the TTL is touched
// (its unchanged head committed again): a session kept alive here by
// reads, or by a connection that stays open, is never expired under its
// users.
//
// # The call log
//
// Every call that got past lookup leaves a record in its session's log in
// the store (Record), appended in batches off the call's path (callLog).
//
// # Replicas
//
// Several processes (replicas) may share one store. Each watches it while
// it serves (watch.go): when a session held in its memory is committed or
// deleted through another process, it drops its copy, so that the next
// call loads the latest revision, and tells Options.Changed. A commit that
// loses the compare-and-swap all the same (the watch reports a change
// after the fact) drops the copy too, and fails with ErrChanged: the
// caller runs the call again, or answers ChangedMessage. A store that this
// process alone writes is not watched, and a call's session is not checked
// against it before the call runs (Use.Fresh).
package sessions

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
)

// DefaultTTL is how long a session named by a handle alone may be idle
// when Options.TTL is zero.
const DefaultTTL = 30 * time.Minute

// Options configures New.
type Options struct {
	// Registry makes the sessions (session.Registry.NewSession).
	Registry *session.Registry
	// Store keeps the sessions; the caller closes it after Close.
	Store store.Store
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// TTL is how long a session named by a handle alone may be idle
	// before it ends; zero means DefaultTTL.
	TTL time.Duration
	// MaxPerOwner bounds the sessions one principal holds live in this
	// process: a request that would start one more gets
	// ErrTooManySessions. Zero means no bound.
	MaxPerOwner int
	// History is how many of its last commits, and of its checkpoints,
	// each session's history keeps (session.History); zero keeps none.
	History int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Changed, when set, is told of each session held in this process
	// that another process changed or deleted: the copy held here is
	// dropped, and the session's clients may want to know.
	Changed func(handle string)
}

// Manager holds the sessions: by handle, and the implicit session of each
// connection. It is safe for concurrent use. Close stops its work in the
// background and waits for it.
type Manager struct {
	registry *session.Registry
	store    store.Store
	logger   *slog.Logger
	ttl      time.Duration
	now      func() time.Time
	onChange func(handle string)
	// retention is how many commits (and checkpoints) each session's
	// history keeps; 0 keeps no history (history.go).
	retention int
	// sharing is the store, when it says whether other processes write to
	// it (sharedStore). While they may, a call checks, under the
	// session's call lock, that its session is at the store's revision
	// (Use.Fresh) before it runs; until then, the store is not watched,
	// as this process sees its every change. A store without the methods,
	// a memory store, is watched (several managers of this process may
	// share it) and not checked.
	sharing sharedStore

	mu      sync.Mutex
	handles map[string]*entry // every live session, by handle
	// owned counts the live sessions by the principal they are bound to;
	// mint starts none for a principal that holds maxOwned (0: no bound).
	owned    map[string]int
	maxOwned int
	conns    map[string]*entry // implicit sessions, by connection
	// connsOf holds, by handle, the connections whose implicit session it
	// names.
	connsOf  map[string][]string
	sweeper  *time.Timer
	sweeping map[string]bool // sessions whose blobs are being swept
	closed   bool

	calls *callLog // the sessions' call logs in the store

	// flights counts the commits of this process in flight, by handle;
	// held keeps the revisions the watch reported for the handle
	// meanwhile, judged once the last has landed.
	flights map[string]int
	held    map[string][]uint64

	ctx  context.Context // of the background work, cancelled by Close
	stop context.CancelFunc
	wg   sync.WaitGroup // the background work

	// changedSlices holds the STATE slices that the history's records changed,
	// as a reader first asked (diff.go), by the roots before and after.
	changedSlices changedCache
}

// sharedStore is a store that says whether other processes write to it:
// Shared reports whether they may now (once true, it stays true), and
// Sharing returns a channel closed when Shared first reports true.
type sharedStore interface {
	Shared() bool
	Sharing() <-chan struct{}
}

// awakeStore is a store that can go dormant when idle (store.JetStream,
// store.Options.Dormancy), and be kept awake.
type awakeStore interface {
	Awake() (release func())
}

// KeepAwake keeps the store from going dormant until release is called,
// for what waits on its watch rather than calling it: a client subscribed
// to a resource hears of other processes' commits only while this process
// is awake. A store that never goes dormant is left as it is. Release may
// be called more than once.
func (m *Manager) KeepAwake() (release func()) {
	if a, ok := m.store.(awakeStore); ok {
		return a.Awake()
	}
	return func() {}
}

// New returns the sessions of opts, and starts its work in the
// background: expiring idle sessions, and watching the store.
func New(opts Options) *Manager {
	m := newManager(opts)
	m.expireEvery(expirePeriod(m.ttl))
	m.watch()
	return m
}

// newManager is New without the work in the background.
func newManager(opts Options) *Manager {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Changed == nil {
		opts.Changed = func(string) {}
	}
	ctx, stop := context.WithCancel(context.Background())
	sharing, _ := opts.Store.(sharedStore)
	return &Manager{
		sharing:   sharing,
		registry:  opts.Registry,
		store:     opts.Store,
		logger:    opts.Logger,
		ttl:       opts.TTL,
		now:       opts.Now,
		onChange:  opts.Changed,
		retention: opts.History,
		handles:   map[string]*entry{},
		owned:     map[string]int{},
		maxOwned:  opts.MaxPerOwner,
		conns:     map[string]*entry{},
		connsOf:   map[string][]string{},
		flights:   map[string]int{},
		held:      map[string][]uint64{},
		sweeping:  map[string]bool{},
		calls:     newCallLog(opts.Store, opts.Logger),
		ctx:       ctx,
		stop:      stop,
	}
}

// TTL returns how long a session named by a handle alone may be idle.
func (m *Manager) TTL() time.Duration { return m.ttl }

// A session's commits in this process write at least sweepAfter blobs,
// or sweepAfterBytes of them, between two sweeps of its blobs: a commit
// of a plan writes none, and a sweep of a small session costs a few
// requests, so a session that writes small files is swept once in 100 to
// 250 calls; one that writes 100 KB files, every 10 or so. A sweep that
// removes more bytes has the server load more of the stream's blocks, 8
// MiB each, at once: over 4,000 writes of 100 KB, a server swept every
// 4 MiB grew its RSS by 46 to 67 MiB, every 1 MiB by 38 to 44 MiB, for
// 3% more CPU a write.
const (
	sweepAfter      = 256
	sweepAfterBytes = 1 << 20
)

// A sweep looks at every blob of a session, which removes the blobs that
// no process will (those a process that died left), once its commits in
// this process have written twice as many blobs as its head uses, and at
// least fullAfter, and twice the bytes that the last such sweep wrote
// again: so its cost, a look at every blob, is a small share of each
// blob written, whatever the session's size. With 1,024, a small
// session's calls wrote 1 KB more each (a sweep every 250 calls or so
// wrote again the blobs its history keeps).
const fullAfter = 16384

// expirePeriod returns how often the store expires idle sessions under
// ttl.
func expirePeriod(ttl time.Duration) time.Duration { return max(ttl/4, time.Minute) }

// entry is one live session and what Manager knows about its use.
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
	// the blobs (and bytes) written since the last sweep of the session's
	// blobs started.
	stored       time.Time
	written      int
	writtenBytes int64
	// Also under the call lock, with a history (history.go): the hash of
	// the blob of the history the head names ("" for none), the history
	// (nil until read), and, until the first commit, the blobs of the
	// empty state, which the first record goes back to.
	histHash   string
	hist       *historyDoc
	emptyBlobs map[string][]byte
	// docStored says whether the root document of state is stored as a
	// blob too, or in the history's tail, as the history's records need
	// the states they name.
	docStored bool
	// tail is the history's tail (tail.go) as the head holds it, with
	// tailN records, tailDoc the root document of its last entry, which
	// the next is written against, and tailDocs its root documents by
	// their hashes (and maybe those of commits that did not land);
	// histDocs are the root documents the history's blob holds (read
	// with hist).
	tail     []byte
	tailN    int
	tailDoc  []byte
	tailDocs map[string][]byte
	histDocs map[string][]byte
	// spare is a buffer for the next tail that drops its oldest record
	// (dropOldest): the one that held the tail before, which nothing
	// reads any more (a sweep reads a copy), so that a commit does not
	// allocate its tail anew; nil when that tail was the store's bytes.
	// ownTail says whether tail is in a buffer of this process's.
	spare   []byte
	ownTail bool
	// Also under the call lock: fresh are the hashes of the blobs its
	// commits wrote (or tried to) since the last sweep started, and
	// freshNames those of them that name others (statetree.Names), which
	// the next sweep reads from here rather than from the store.
	// Under m.mu: index is what the last sweep found the session uses,
	// with which the next sweep looks at what changed since (nil: it
	// reads what the head uses whole).
	fresh      []string
	freshNames []blob
	index      *statetree.Index
	// Also under the call lock: the blobs (and bytes) written since the
	// last sweep that looked at every blob of the session, or since it
	// was loaded; under m.mu, the bytes that sweep wrote again.
	sinceFull      int
	sinceFullBytes int64
	fullKeptBytes  int64
}

// mint starts a session bound to owner under a fresh handle, or under name
// when it is not empty (the caller makes sure it names no stored session),
// creates it in the store, and returns it in use. The caller holds m.mu.
func (m *Manager) mint(ctx context.Context, name, owner string) (*entry, error) {
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
func (m *Manager) newEntry(h, owner string) (*entry, error) {
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
	for _, r := range s.Resources() {
		if t, ok := r.(statetree.Stasher); ok {
			t.SetStash(m.stash(e))
		}
	}
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
func (m *Manager) load(ctx context.Context, h, owner string) (*entry, error) {
	e, err := m.decode(ctx, h, owner)
	if err != nil {
		return nil, err
	}
	m.hold(e)
	return e, nil
}

// decode is load without making the session live: the entry it returns is
// the caller's alone.
func (m *Manager) decode(ctx context.Context, h, owner string) (*entry, error) {
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
	if len(hd.Tail) > 0 {
		t, err := parseTail(hd.Tail)
		if err != nil {
			_ = e.sess.Close()
			return nil, fmt.Errorf("session %s: %w", h, err)
		}
		e.tail, e.tailN, e.tailDoc, e.tailDocs = hd.Tail, len(t.records), t.last, t.docs
	}
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
func (m *Manager) hold(e *entry) {
	m.handles[e.handle] = e
	m.owned[e.owner]++
}

// deleteStored deletes the session h from the store, with its call log.
func (m *Manager) deleteStored(h string) {
	m.calls.drop(h)
	if err := m.store.Delete(context.Background(), h); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.logger.Error("deleting a session from the store failed", "session", session.LogHandle(h), "err", err)
	}
}

// resolve returns the session named h, in use, if owner may use it,
// loading it from the store on its first use in this process. The caller
// holds m.mu.
func (m *Manager) resolve(ctx context.Context, h, owner string) (*entry, error) {
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
func (m *Manager) forget(e *entry) {
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
func (m *Manager) evict(e *entry) {
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

// Commit is what a commit records of the call that made it, in the
// session's history.
type Commit struct {
	// CallID and Tool name the call.
	CallID, Tool string
	// ReadOnly says that the call's tool is read-only: it changes the
	// policies' memory only, and its commit is not in the history.
	ReadOnly bool
	// Tx is the call's transaction: what its session held before the
	// call, and the files it changed.
	Tx *session.Tx
}

// commit stores the state of e after call succeeded (nil: no call, a
// test): nothing when the call changed nothing and asked nothing of the
// history (hist), otherwise the blobs the change needs and a new head
// (put), with the call's record in the session's history, if it keeps one
// and the call's tool is not read-only (such a call changes only the
// policies' memory). When another writer committed first, it returns
// ErrChanged. The caller holds the session's call lock.
func (m *Manager) commit(ctx context.Context, e *entry, call *Commit, ch *callHistory) (sent bool, err error) {
	st, blobs, err := statetree.Encode(e.sess, e.state)
	if err != nil {
		return false, err
	}
	changed := !(e.state == nil && st.Root == e.empty) && !(e.state != nil && st.Root == e.state.Root)
	recorded := m.retention > 0 && call != nil && !call.ReadOnly
	var files []session.FileChange
	if recorded && call.Tx != nil {
		if files, err = call.Tx.Changes(); err != nil {
			return false, err
		}
	}
	// A change of files outside the state (a disk workspace) is recorded
	// in the history, whatever the state did.
	outside := slices.ContainsFunc(files, func(c session.FileChange) bool { return c.Outside })
	if !changed && !outside && !ch.pending() {
		if e.state != nil {
			e.state = st // the same state, with the values the next call compares against
		}
		return false, nil // still the state the head holds
	}
	hd := head{Doc: st.Doc, Owner: e.owner, History: e.histHash, Tail: e.tail}
	var hist *historyDoc
	dropped := false // the tail dropped its oldest record
	tailN, tailDoc, histDocs := e.tailN, e.tailDoc, e.histDocs
	if recorded {
		if blobs == nil && (e.state == nil || len(files) > 0) {
			blobs = map[string][]byte{} // for nextHistory
		}
		var rec *session.HistoryCommit
		var keep []byte
		if hist, rec, keep, err = m.nextHistory(ctx, e, call, ch, st, changed || outside, files, blobs); err != nil {
			return false, err
		}
		// The history names states by their root documents' hashes, and
		// goes back to one by reading its document: from the tail, or
		// from its blob once the history's blob is written again.
		var recBin []byte
		if rec != nil {
			// In the tail, a record's root is the hash of the document
			// beside it, and what it goes back to that of the entry
			// before it, if any: neither is written (parseTail).
			var before *session.HistoryCommit
			if tailN > 0 && len(hist.Commits) >= 2 {
				before = &hist.Commits[len(hist.Commits)-2]
			}
			if recBin, err = appendRecord(nil, rec, before, keep == nil && tailN == 0, false); err != nil {
				return false, err
			}
		}
		// A full tail drops its oldest record, the one the history drops,
		// rather than the commit writing the history's blob (dropOldest),
		// while it is small and that record changed no files outside the
		// state (whose loss the blob records).
		var tail []byte
		if !ch.pending() && rec != nil && tailN == m.retention && len(e.tail)+len(recBin)+len(keep)+len(st.Doc) <= ringBytes &&
			len(e.hist.Commits) == m.retention && m.retention >= 2 && !outsideFiles(e.hist.Commits[0]) && hist.Lost == e.hist.Lost {
			oldest := &e.hist.Commits[0]
			if doc, ok := e.tailDocs[oldest.Root]; !ok {
				// The tail holds the document of each of its records: a
				// tail that does not is left to the history's blob.
			} else if t, err := dropOldest(e.spare[:0], e.tail, oldest, &e.hist.Commits[1], doc); err == nil {
				tail, tailN, dropped = t, tailN-1, true
			}
		}
		if tail == nil && (ch.pending() || rec == nil || tailN >= m.retention || len(e.tail)+len(recBin)+len(st.Doc)+len(keep) > tailBytes) {
			docs := func(root string) ([]byte, bool) {
				switch {
				case root == st.Root:
					return st.Doc, true
				case keep != nil && root == e.state.Root:
					return keep, true
				}
				if doc, ok := e.tailDocs[root]; ok {
					return doc, true
				}
				doc, ok := e.histDocs[root]
				return doc, ok
			}
			if blobs == nil {
				blobs = map[string][]byte{}
			}
			hb, held, err := historyBlob(hist, docs, blobs)
			if err != nil {
				return false, err
			}
			hd.History, hd.Tail = statetree.Hash(hb), nil
			blobs[hd.History] = hb
			tailN, tailDoc, histDocs = 0, nil, held
		} else {
			if tail == nil {
				tail = e.tail // appended past its end: e.tail holds what it did until the commit lands
			}
			if e.tailDocs == nil {
				e.tailDocs = map[string][]byte{}
			}
			if keep != nil {
				tail, tailDoc = appendTail(tail, tailDoc, nil, keep), keep
				e.tailDocs[e.state.Root] = keep
			}
			hd.Tail = appendTail(tail, tailDoc, recBin, st.Doc)
			tailN, tailDoc = tailN+1, st.Doc
			e.tailDocs[st.Root] = st.Doc
		}
	}
	switch err := m.put(ctx, e, hd.marshal(), blobs); {
	case errors.Is(err, store.ErrConflict):
		return true, ErrChanged
	case errors.Is(err, store.ErrNotFound):
		return true, ErrUnknownSession
	case err != nil:
		return true, StoreError{err}
	}
	e.state, e.stored, e.docStored = st, m.now(), recorded
	e.emptyBlobs = nil
	if hist != nil {
		e.hist, e.histHash = hist, hd.History
		switch {
		case dropped && e.ownTail:
			e.spare = e.tail[:0]
		case dropped:
			e.spare, e.ownTail = nil, true
		case hd.Tail == nil:
			e.ownTail = true // the next tail is appended to nothing
		}
		e.tail, e.tailN, e.tailDoc, e.histDocs = hd.Tail, tailN, tailDoc, histDocs
		if hd.Tail == nil {
			clear(e.tailDocs)
		} else if dropped && len(e.tailDocs) > 2*m.retention+2 {
			// The documents of the records the tail dropped, once they
			// are as many as it holds: not one for each commit.
			named := make(map[string]bool, 2*len(hist.Commits))
			for _, c := range hist.Commits {
				named[c.Prev], named[c.Root] = true, true
			}
			maps.DeleteFunc(e.tailDocs, func(root string, _ []byte) bool { return !named[root] })
		}
	}
	var size int64
	for _, b := range blobs {
		size += int64(len(b))
	}
	e.wrote(len(blobs), size)
	m.startSweep(e, hd)
	return true, nil
}

// stash returns how the trees of e store a file's content as a call
// writes it: at once, as a located blob of the session
// (store.Store.PutData), which the next sweep counts among the blobs its
// commits wrote, and removes if the call that wrote it failed or its
// file is gone. It runs within a call, under the session's call lock.
func (m *Manager) stash(e *entry) statetree.Stash {
	return func(content []byte) (string, error) {
		names, err := m.store.PutData(context.Background(), e.handle, [][]byte{content})
		if err != nil {
			return "", StoreError{err}
		}
		e.fresh = append(e.fresh, names[0]) // stored, or may be
		e.wrote(1, int64(len(content)))
		return names[0], nil
	}
}

// put commits head, and blobs before it, as the next revision of e, by
// compare-and-swap on the revision e holds, and records the revision it
// wrote. A conflict (another writer committed first) drops e from memory,
// so that the next call loads the latest revision. What the watch reports
// of the session meanwhile waits until the commit has landed (see
// changed). The caller holds the session's call lock.
func (m *Manager) put(ctx context.Context, e *entry, head []byte, blobs map[string][]byte) error {
	m.mu.Lock()
	m.flights[e.handle]++
	m.mu.Unlock()
	rev, err := m.store.Commit(ctx, e.handle, e.rev, head, blobs)
	for h, b := range blobs {
		e.fresh = append(e.fresh, h) // stored, or may be
		if statetree.Names(b) {
			e.freshNames = append(e.freshNames, blob{h, b})
		}
	}
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
		m.onChange(e.handle)
	}
	return err
}

// startSweep starts sweeping the blobs of e that hd, its head just
// committed, does not use, once its commits have written enough blobs
// since the last sweep (see Sessions), unless a sweep of it is running or
// the sessions are closed. The caller holds the session's call lock.
func (m *Manager) startSweep(e *entry, hd head) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !e.sweepDue() || m.closed || m.sweeping[e.handle] {
		return
	}
	e.written, e.writtenBytes = 0, 0
	m.sweeping[e.handle] = true
	x, fresh := e.index, e.fresh
	full := x != nil && e.fullDue()
	if full {
		e.sinceFull, e.sinceFullBytes = 0, 0
	}
	// The history of hd, when read: its records are not changed in place
	// (nextHistory), nor the root documents its blob held.
	held := heldHistory{doc: e.hist, docs: e.histDocs, written: e.freshNames}
	e.index, e.fresh, e.freshNames = nil, nil, nil
	hd.Tail = slices.Clone(hd.Tail) // its buffer is written again by a commit to come (entry.spare)
	m.wg.Add(1)
	go m.sweepBlobs(e, e.rev, hd, held, x, fresh, full)
}

// wrote counts n blobs of size bytes in all that e's commits, or its
// calls' stashes, wrote, towards its next sweeps (sweepDue, fullDue). The
// caller holds the session's call lock.
func (e *entry) wrote(n int, size int64) {
	e.written += n
	e.sinceFull += n
	e.writtenBytes += size
	e.sinceFullBytes += size
}

// fullDue reports whether e's commits have written enough blobs since
// the last sweep that looked at every blob of the session (or since e
// was loaded) for another: twice as many as the index holds and at least
// fullAfter, and twice the bytes that sweep wrote again. The caller holds
// m.mu, and e has an index.
func (e *entry) fullDue() bool {
	return e.sinceFull >= max(2*e.index.Len(), fullAfter) && e.sinceFullBytes >= 2*e.fullKeptBytes
}

// sweepDue reports whether e's commits have written enough blobs since
// the last sweep for another (see Manager): sweepAfter, or
// sweepAfterBytes.
func (e *entry) sweepDue() bool {
	return e.written >= sweepAfter || e.writtenBytes >= sweepAfterBytes
}

// sweepBlobs removes the blobs of e written before rev that hd, its head
// at rev, does not use: its state, and its history with what that keeps.
// It updates x, the index of what the last sweep found the session uses
// (nil: none, so it reads everything hd uses), to hd's roots, reading
// what they added, and removes what only the old roots used and what
// fresh, the blobs written since, holds that hd does not use (sweep.go):
// its cost is what changed. When full, it has the store look at every
// blob of the session instead (store.Store.Sweep), which removes what
// this process did not write, such as what a process that died left.
// Its failure fails no call: the blobs stay until the next sweep, which
// reads everything again.
func (m *Manager) sweepBlobs(e *entry, rev uint64, hd head, held heldHistory, x *statetree.Index, fresh []string, full bool) {
	defer m.wg.Done()
	h := e.handle
	var done *statetree.Index // the index at rev, once the sweep is done
	var sw store.Swept
	defer func() {
		m.mu.Lock()
		delete(m.sweeping, h)
		e.index = done
		if done != nil && full {
			e.fullKeptBytes = sw.KeptBytes
		}
		m.mu.Unlock()
	}()
	if x == nil {
		x = statetree.NewIndex() // read whole by its first Update
	}
	reads := x.Reads()
	roots, get, err := m.headRoots(m.ctx, h, hd, held)
	var dead []string
	if err == nil {
		dead, err = x.Update(roots, get)
	}
	switch {
	case err != nil:
	case full:
		sw, err = m.store.Sweep(m.ctx, h, rev, x.Has)
	default:
		sw.Removed, err = m.store.Remove(m.ctx, h, rev, appendUnused(dead, fresh, x))
	}
	if err == nil {
		done = x
	}
	switch {
	case err == nil:
		m.logger.Debug("swept a session's unused blobs", "session", session.LogHandle(h), "removed", sw.Removed, "rewritten", sw.Kept, "used", x.Len(), "read", x.Reads()-reads, "whole", full)
	case errors.Is(err, store.ErrNotFound) || m.ctx.Err() != nil:
		m.logger.Debug("sweeping a session's blobs stopped", "session", session.LogHandle(h), "err", err)
	default:
		m.logger.Warn("sweeping a session's blobs failed", "session", session.LogHandle(h), "err", err)
	}
}

// expireEvery has the store expire idle sessions every period until
// Close, touching first the sessions live in this process.
func (m *Manager) expireEvery(period time.Duration) {
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
				// Work in the background, which does not keep a
				// dormant store awake.
				m.expire(store.Background(m.ctx))
			}
		}
	}()
}

// expire touches every session live in this process that has not expired
// here, then has the store delete the sessions last committed longer than
// the TTL ago.
func (m *Manager) expire(ctx context.Context) {
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
func (m *Manager) touch(ctx context.Context, e *entry) {
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
	hd := head{Owner: e.owner, History: e.histHash, Tail: e.tail}
	if e.state != nil {
		hd.Doc = e.state.Doc
	}
	switch err := m.put(ctx, e, hd.marshal(), nil); {
	case errors.Is(err, store.ErrConflict): // committed elsewhere: fresh
	case err != nil:
		m.logger.Warn("touching a session in the store failed", "session", session.LogHandle(e.handle), "err", err)
	default:
		e.stored = m.now()
	}
}

// Close stops the background work on the store and waits for it, and for
// the calls' records to be appended to their logs.
func (m *Manager) Close() {
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
func (m *Manager) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.used = m.now()
	m.drop(e)
}

// drop ends a use of e, closing it if it has ended and was the last. The
// caller holds m.mu.
func (m *Manager) drop(e *entry) {
	e.inUse--
	if e.ended && e.inUse == 0 {
		_ = e.sess.Close()
	}
}

// expired reports whether e, a session named by its handle alone, has been
// idle for longer than the TTL.
func (m *Manager) expired(e *entry, now time.Time) bool {
	return e.conn == "" && e.inUse == 0 && now.Sub(e.used) > m.ttl
}

// connection returns, in use, the implicit session of the connection id,
// starting it bound to owner (under name, when not empty) on first use.
// Whoever may send on a connection uses its session: the transport decides
// who may (an Mcp-Session-Id is as hard to guess as a handle); the binding
// to owner applies when the session's handle is presented.
//
// A connection whose session was dropped from memory (its commit met
// another writer's) loads it again.
func (m *Manager) connection(ctx context.Context, id, owner, name string) (*entry, error) {
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
func (m *Manager) unbind(id string) {
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
func (m *Manager) sweep() {
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

// End lets go of the implicit session of the connection id, which has
// gone. When its client ended it (final: an HTTP DELETE), the session
// ends too, with what it stored, unless the process named it. Otherwise
// (this process is stopping, a stream closed, the connection idled out)
// it leaves this process's memory and stays in the store until it has
// been idle for the TTL, for its handle to continue it, here after a
// restart or on another replica.
func (m *Manager) End(id string, final bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.conns[id]; e != nil {
		m.unbind(id)
		if final {
			m.forget(e)
		} else {
			m.evict(e)
		}
	}
}

// Get returns the implicit session of the connection id, starting it if
// needed, whoever it is bound to. It is for tests that look at a client's
// state.
func (m *Manager) Get(id string) (*session.Session, error) {
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
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.handles)
}

// Need says what a request does when it names no session and its
// connection has none.
type Need int

const (
	// NeedExisting refuses it with ErrNoSession (a read of session state).
	NeedExisting Need = iota
	// NeedNew starts a session under a fresh handle (a call that changes
	// state).
	NeedNew
	// NeedAny runs it in an empty session of its own (a stateless tool, a
	// resource or prompt).
	NeedAny
)

// Request is what a request tells of the session it uses.
type Request struct {
	// Handle is the session the request names, "" for none.
	Handle string
	// Conn is the connection whose implicit session the request uses when
	// it names none, "" for a request without one (a 2026-07-28 request
	// over HTTP). A stdio process is one connection; so is a 2025-11-25
	// protocol session over HTTP.
	Conn string
	// Name, with Conn, names the connection's implicit session: its first
	// request resumes the session called Name, or starts it under that
	// name (--session); "" gives it a fresh handle.
	Name string
	// Owner is the request's principal (identity.Identity.Principal).
	Owner string
	// Need says what a request that names no session and has no
	// connection does.
	Need Need
}

// Use is a request's use of its session, until Release.
type Use struct {
	// Session is the session.
	Session *session.Session
	// Handle names it; "" for a session of the request's own.
	Handle string
	// Minted says that the request started it: a call that fails in it
	// discards it (Discard).
	Minted bool

	release func()
	e       *entry // nil for a session of the request's own
	m       *Manager
	history *callHistory
	// tmp marks a snapshot (Snapshot): its commit drops the copy held
	// here, which it made stale.
	tmp bool
	// sent is set once Commit sent a revision of the session to the
	// store.
	sent bool
}

// Sent reports whether Commit sent a revision of the session to the
// store, by compare-and-swap on the revision the call started from: its
// outcome says whether that was the latest (it was stored), that it was
// not (ErrChanged), or that nothing could tell (a StoreError). A call
// that changed nothing sends nothing.
func (u *Use) Sent() bool { return u.sent }

// Release ends the request's use of the session.
func (u *Use) Release() { u.release() }

// Commit stores the session's state after a call that succeeded: nothing
// when it changed nothing (a read-only call's memory aside), otherwise
// once, by compare-and-swap on the revision the call started from. It
// returns ErrChanged when another writer committed first, ErrUnknownSession
// when the session has been deleted meanwhile, and a StoreError when the
// store failed. The caller holds the session's call lock. A session of the
// request's own stores nothing.
func (u *Use) Commit(ctx context.Context, c *Commit) error {
	if u.e == nil {
		return nil
	}
	sent, err := u.m.commit(ctx, u.e, c, u.history)
	u.sent = sent
	if err != nil {
		return err
	}
	if u.tmp {
		u.m.mu.Lock()
		u.m.foreign(u.Handle, u.e.rev)
		u.m.mu.Unlock()
	}
	return nil
}

// Fresh checks, before a call runs, that no other process changed the
// session since this one loaded or last committed it, and returns
// ErrStale if one did: the session has been dropped from memory, and the
// call may run again on the latest revision. It is free when no other
// process writes the store, or when the request started the session. The
// caller holds the session's call lock.
func (u *Use) Fresh(ctx context.Context) error {
	if u.e == nil || u.m.sharing == nil || !u.m.sharing.Shared() || u.Minted || u.tmp {
		return nil
	}
	return u.m.fresh(ctx, u.e)
}

// History returns the call's part in its session's history, nil when the
// sessions keep none or the session is the request's own.
func (u *Use) History() session.History {
	if u.history == nil {
		return nil
	}
	return u.history
}

// Use returns the session of r, in this order: the session r names, if
// r's principal may use it; the implicit session of r's connection;
// otherwise what r.Need says.
func (m *Manager) Use(ctx context.Context, r Request) (*Use, error) {
	var e *entry
	var err error
	minted := false
	switch {
	case r.Handle != "":
		m.mu.Lock()
		e, err = m.resolve(ctx, r.Handle, r.Owner)
		m.mu.Unlock()
	case r.Conn != "":
		e, err = m.connection(ctx, r.Conn, r.Owner, r.Name)
	case r.Need == NeedNew:
		m.mu.Lock()
		e, err = m.mint(ctx, "", r.Owner)
		if err == nil && m.sweeper == nil {
			m.sweeper = time.AfterFunc(m.ttl+time.Second, m.sweep)
		}
		m.mu.Unlock()
		minted = true
	case r.Need == NeedAny:
		s, err := m.registry.NewSession("request-" + rand.Text())
		if err != nil {
			return nil, err
		}
		return &Use{Session: s, release: func() { _ = s.Close() }, m: m}, nil
	default:
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	u := &Use{Session: e.sess, Handle: e.handle, Minted: minted, e: e, m: m,
		release: func() { m.release(e) }}
	if m.retention > 0 {
		u.history = &callHistory{m: m, e: e}
	}
	return u, nil
}

// Read is Use for a read outside a call (a resource): in a store that
// other processes write, it makes sure that the session is the store's
// latest revision (Use.Fresh), loading it again when another process
// changed it. Its Session is the session as its last commit left it
// (session.Session.Committed), never a call in progress.
func (m *Manager) Read(ctx context.Context, r Request) (*Use, error) {
	for run := 1; ; run++ {
		u, err := m.Use(ctx, r)
		if err != nil {
			return nil, err
		}
		if err = u.Fresh(ctx); err == nil {
			u.Session = u.Session.Committed()
			return u, nil
		}
		u.Release()
		if !errors.Is(err, ErrStale) || run == maxReads {
			return nil, err
		}
	}
}

// maxReads is how many times Read loads a session that keeps changing
// through other processes.
const maxReads = 5

// Started reports whether the implicit session of the connection conn is
// live here, or named (name, by the process): whether a request on it
// that names no session has one.
func (m *Manager) Started(conn, name string) bool {
	if conn == "" {
		return false
	}
	if name != "" {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[conn] != nil
}

// Conns returns the connections whose implicit session is h.
func (m *Manager) Conns(h string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.connsOf[h])
}

// Snapshot returns, for a task, a use of session h of owner that no other
// request shares: the session decoded from the store's latest revision,
// which commits by compare-and-swap on that revision, and then drops the
// copy this process holds of h, older than the revision committed.
func (m *Manager) Snapshot(ctx context.Context, h, owner string) (*Use, error) {
	e, err := m.decode(ctx, h, owner)
	if errors.Is(err, store.ErrNotFound) {
		err = ErrUnknownSession
	}
	if err != nil {
		return nil, err
	}
	u := &Use{Session: e.sess, Handle: h, e: e, m: m, tmp: true,
		release: func() { _ = e.sess.Close() }}
	if m.retention > 0 {
		u.history = &callHistory{m: m, e: e}
	}
	return u, nil
}

// Discard ends a session a request started and then failed in: nothing
// was kept in it, and its handle was never shown.
func (m *Manager) Discard(handle string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.handles[handle]; e != nil {
		m.forget(e)
	}
}
