package session

import (
	"errors"
	"maps"

	"golang.org/x/sync/semaphore"
)

// Freezer is a per-session resource that holds state of its own (a
// workspace) and can give a read-only copy of itself as it is now. Freeze
// must be cheap, as Snapshot is: it is taken when a call begins. A resource
// that cannot be copied (a directory on disk) may return itself, and says
// so in its documentation.
type Freezer interface {
	Freeze() any
}

// ErrView is the error of a call begun on a view of a session
// (Committed), which is read-only.
var ErrView = errors.New("session: a committed view is read-only")

// Committed returns the session as its last commit left it, for a reader
// outside the session's calls (a resource read, a subscription, the
// console): while a call that changes state runs, the state it began
// from, never the call's own changes, which may yet be rolled back;
// otherwise the session as it is. The view is read-only: its STATE slices
// are those of that moment, its resources the Freeze of those that
// implement Freezer (the others are the session's own), and no call can
// begin on it. It costs a copy of the map of slices, whatever they hold.
func (s *Session) Committed() *Session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.frozen {
		return s
	}
	if s.view != nil {
		return s.view
	}
	return s.freeze(maps.Clone(s.state))
}

// freeze returns a view of s holding state, with the Freeze of each
// resource that implements Freezer. The caller holds s.mu, and no call
// changes the resources meanwhile.
func (s *Session) freeze(state map[string]any) *Session {
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
		if f, ok := r.(Freezer); ok {
			r = f.Freeze()
		}
		v.resources[name] = r
	}
	return v
}

// hide makes readers see v (a view of s taken before a change) until
// show; the caller holds s.mu.
func (s *Session) hide(v *Session) { s.view = v }

// show lets readers see the session as it is again.
func (s *Session) show() {
	s.mu.Lock()
	s.view = nil
	s.mu.Unlock()
}
