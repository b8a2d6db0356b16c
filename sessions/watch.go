package sessions

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// How long the watch of the store waits before it starts again after a
// failure: watchRetry, doubled after each failure up to watchRetryMax.
const (
	watchRetry    = 100 * time.Millisecond
	watchRetryMax = 30 * time.Second
)

// watch follows the changes of sessions' heads in the store until Close,
// passing each to changed, after catching up with those it could not see
// (catchUp); a store that says whether other processes write to it is
// watched from when they may. A watch that fails to start (the store is down) or ends while
// the sessions are open is logged and started again after a wait that
// doubles from watchRetry up to watchRetryMax; the wait starts over once a
// watch has run for watchRetryMax.
func (m *Manager) watch() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if m.sharing != nil {
			select {
			case <-m.sharing.Sharing():
			case <-m.ctx.Done():
				return
			}
		}
		wait := watchRetry
		for {
			started := time.Now()
			changes, err := m.store.Watch(m.ctx)
			if err == nil {
				m.catchUp()
				for c := range changes {
					m.changed(c)
				}
				err = errors.New("the watch ended")
			}
			if m.ctx.Err() != nil {
				return
			}
			if time.Since(started) >= watchRetryMax {
				wait = watchRetry
			}
			m.logger.Warn("watching the session store failed: changes made through other processes are not seen until it is back", "err", err, "retry_in", wait)
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, watchRetryMax)
		}
	}()
}

// catchUp compares each session held in memory with its head in the
// store, once a watch has started: a watch reports only the changes made
// after it started, and a session may have been loaded before (or while
// the store could not be watched). A session another process changed or
// deleted meanwhile is dropped, and its clients told, as changed does.
func (m *Manager) catchUp() {
	m.mu.Lock()
	held := maps.Clone(m.handles)
	m.mu.Unlock()
	for h, e := range held {
		if _, err := m.recheck(m.ctx, h, e); err != nil {
			m.logger.Debug("checking a session against the store failed", "session", session.LogHandle(h), "err", err)
		}
	}
}

// recheck compares e, the session h held in memory, with its head in the
// store. When another process changed or deleted it since this process
// loaded or last committed it, and no commit of it by this process is in
// flight, e is dropped and the clients whose connection's session it is
// are told. It reports whether it dropped e.
func (m *Manager) recheck(ctx context.Context, h string, e *entry) (bool, error) {
	head, err := m.store.Load(ctx, h)
	switch {
	case errors.Is(err, store.ErrNotFound):
		head.Rev = 0 // deleted
	case err != nil:
		return false, err
	}
	m.mu.Lock()
	stale := m.handles[h] == e && m.flights[h] == 0 && (head.Rev == 0 || head.Rev > e.rev)
	if stale {
		m.evict(e)
	}
	m.mu.Unlock()
	if stale {
		m.onChange(h)
	}
	return stale, nil
}

// fresh returns ErrStale when e, the session of a call about to run, is no
// longer the latest: another process changed it since this one loaded or
// last committed it (recheck), or it has been dropped meanwhile (by the
// watch). The caller holds the session's call lock.
func (m *Manager) fresh(ctx context.Context, e *entry) error {
	if _, err := m.recheck(ctx, e.handle, e); err != nil {
		return StoreError{err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handles[e.handle] != e {
		return ErrStale
	}
	return nil
}

// changed takes the watch's report that session c.Session moved to
// revision c.Rev (0: it was deleted). While a commit of the session by
// this process is in flight, the report waits for it to land (land);
// otherwise, when another process made the change, the copy of the
// session held here, now stale, is dropped, and the clients whose
// connection's session it is are told.
func (m *Manager) changed(c store.Change) {
	m.mu.Lock()
	if m.flights[c.Session] > 0 {
		m.held[c.Session] = append(m.held[c.Session], c.Rev)
		m.mu.Unlock()
		return
	}
	foreign := m.foreign(c.Session, c.Rev)
	m.mu.Unlock()
	if foreign {
		m.onChange(c.Session)
	}
}

// land ends one of the commits of session h in flight. After the last,
// it judges the revisions the watch reported meanwhile, and reports
// whether another process wrote one of them. The caller holds m.mu.
func (m *Manager) land(h string) bool {
	if m.flights[h]--; m.flights[h] > 0 {
		return false
	}
	delete(m.flights, h)
	foreign := false
	for _, rev := range m.held[h] {
		foreign = m.foreign(h, rev) || foreign
	}
	delete(m.held, h)
	return foreign
}

// foreign reports whether revision rev of session h (0: its deletion) was
// written by another process, when no commit of h by this process is in
// flight: any revision of a session not held here; a revision later than
// the one held, or the deletion, which drops the copy held; the revision
// held, if it was loaded rather than written here. An earlier revision is
// one the copy held has already taken in. The caller holds m.mu.
func (m *Manager) foreign(h string, rev uint64) bool {
	e := m.handles[h]
	switch {
	case e == nil:
		return true
	case rev == 0 || rev > e.rev:
		m.evict(e)
		return true
	}
	return rev == e.rev && !e.mine
}
