package sessions

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// Listing is a session as the store holds it, for a view of the sessions.
type Listing struct {
	// Handle names the session.
	Handle string
	// Changed is when the session last committed.
	Changed time.Time
}

// List returns the sessions in the store that owner may use, the one
// changed last first: one scan of the store's heads, for a person's view
// of the sessions, never for a call.
func (m *Manager) List(ctx context.Context, owner string) ([]Listing, error) {
	heads, err := m.store.Heads(ctx)
	if err != nil {
		return nil, StoreError{err}
	}
	var out []Listing
	for _, h := range heads {
		hd, err := parseHead(h.Data)
		if err != nil || hd.Owner != owner || !validHandle(h.Session) {
			continue
		}
		out = append(out, Listing{Handle: h.Session, Changed: h.Time})
	}
	slices.SortFunc(out, func(a, b Listing) int {
		return cmp.Or(b.Changed.Compare(a.Changed), cmp.Compare(a.Handle, b.Handle))
	})
	return out, nil
}

// ByLogID returns the handle of the session of owner whose log identifier
// (session.LogID) is id, for a person's view that names a session without
// its handle (the console's pages); ErrUnknownSession when owner has none.
// It scans the store's heads, as List does.
func (m *Manager) ByLogID(ctx context.Context, owner, id string) (string, error) {
	if !strings.HasPrefix(id, "sid_") {
		return "", ErrUnknownSession
	}
	list, err := m.List(ctx, owner)
	if err != nil {
		return "", err
	}
	for _, l := range list {
		if session.LogID(l.Handle) == id {
			return l.Handle, nil
		}
	}
	return "", ErrUnknownSession
}

// Delete ends the session h, if owner may use it, whoever named it: it
// leaves this process's memory, and the store with its state, blobs and
// call log (other processes then drop it as their watch reports it). It
// returns ErrUnknownSession for a session that does not exist or is not
// owner's.
func (m *Manager) Delete(ctx context.Context, h, owner string) error {
	if _, err := m.ownedHead(ctx, h, owner); err != nil {
		return err
	}
	m.mu.Lock()
	if e := m.handles[h]; e != nil {
		m.evict(e)
		if e.conn != "" && m.conns[e.conn] == e {
			m.unbind(e.conn)
		}
	}
	m.mu.Unlock()
	m.calls.drop(h)
	if err := m.store.Delete(ctx, h); err != nil && !errors.Is(err, store.ErrNotFound) {
		return StoreError{err}
	}
	m.onChange(h)
	return nil
}

// ownedHead returns the head of session h as the store holds it, if owner
// may use the session: ErrUnknownSession for a session that does not exist
// or is not owner's, a StoreError when the store failed.
func (m *Manager) ownedHead(ctx context.Context, h, owner string) (head, error) {
	if !validHandle(h) {
		return head{}, ErrUnknownSession
	}
	stored, err := m.store.Load(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return head{}, ErrUnknownSession
	}
	if err != nil {
		return head{}, StoreError{err}
	}
	hd, err := readHead(h, stored.Data)
	if err != nil || hd.Owner != owner {
		return head{}, ErrUnknownSession
	}
	return hd, nil
}
