package session

import (
	"errors"
	"maps"

	"golang.org/x/sync/semaphore"
)

// Freezer is a per-session resource that holds state of its own (a
// workspace), or a Restorer of one, that can give a read-only copy of
// that state: the resource as it is now, the Restorer as it was at its
// snapshot. Freeze must be cheap, as Snapshot is. One that cannot copy its
// state (a directory on disk) may return the resource itself, and says so
// in its documentation.
type Freezer interface {
	Freeze() any
}

// ErrView is the error of a call begun on a view of a session
// (Committed), which is read-only.
var ErrView = errors.New("session: a committed view is read-only")

// hidden is what readers of a session see instead of it while a call
// changes it: the STATE slices as the call began (never changed while
// hidden), and the call's Restorers, in the order of the session's
// Snapshotters (nil for a read-only call's Apply, which changes slices
// only).
type hidden struct {
	state     map[string]any
	restorers []Restorer
}

// Committed returns the session as its last commit left it, for a reader
// outside the session's calls (a resource read, a subscription, the
// console): while a call that changes state runs, the state it began
// from, never the call's own changes, which may yet be rolled back;
// otherwise the session as it is. The view is read-only: its STATE slices
// are those of that moment, its resources the Freeze of those that
// implement Freezer (or of their Restorer, during a call), the others the
// session's own, and no call can begin on it. It costs a copy of the map
// of slices, whatever they hold; a call costs nothing for it until a
// reader asks.
func (s *Session) Committed() *Session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.frozen {
		return s
	}
	if h := s.during; h != nil {
		return s.freeze(maps.Clone(h.state), h.restorers)
	}
	return s.freeze(maps.Clone(s.state), nil)
}

// freeze returns a view of s holding state, with the Freeze of each
// resource that implements Freezer, or of its Restorer among restorers
// when that does. The caller holds s.mu.
func (s *Session) freeze(state map[string]any, restorers []Restorer) *Session {
	v := &Session{
		id:        s.id,
		registry:  s.registry,
		created:   s.created,
		call:      semaphore.NewWeighted(whole),
		state:     state,
		resources: make(map[string]any, len(s.resources)),
		closed:    s.closed,
		frozen:    true,
	}
	for name, r := range s.resources {
		v.resources[name] = frozen(r, s.snapshot, restorers)
	}
	return v
}

// frozen returns the Freeze of r: of its Restorer among restorers (which
// follow snapshot) if it has one that implements Freezer, else of r if it
// implements Freezer, else r.
func frozen(r any, snapshot []Snapshotter, restorers []Restorer) any {
	if sn, ok := r.(Snapshotter); ok {
		for i, x := range snapshot {
			if x == sn && i < len(restorers) {
				if f, ok := restorers[i].(Freezer); ok {
					return f.Freeze()
				}
			}
		}
	}
	if f, ok := r.(Freezer); ok {
		return f.Freeze()
	}
	return r
}

// hide makes readers see h until show. The caller holds s.mu.
func (s *Session) hide(h *hidden) { s.during = h }

// show lets readers see the session as it is again.
func (s *Session) show() {
	s.mu.Lock()
	s.during = nil
	s.mu.Unlock()
}
