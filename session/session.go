// Package session holds the state of one client session: typed STATE
// slices (rolled back when a call fails), the reducers that turn events into
// new slice values, per-session resources, and the transactions that
// snapshot and restore all of it.
//
// Values stored in slices are treated as immutable: a reducer returns a new
// value instead of changing the old one. A snapshot is therefore a shallow
// copy of the map from slice name to value, whose cost depends on the number
// of slices, never on the size of what they hold. Resources that hold state of
// their own (a workspace, say) join a transaction through the Snapshotter
// interface.
package session

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Key names a typed STATE slice holding one value of type T.
type Key[T any] struct{ name string }

// NewKey returns the key of the STATE slice called name.
func NewKey[T any](name string) Key[T] { return Key[T]{name: name} }

// Name returns the slice's name.
func (k Key[T]) Name() string { return k.name }

// ErrClosed is returned by operations on a closed session.
var ErrClosed = errors.New("session closed")

// Session is the state of one client session. It is safe for concurrent
// use; its calls take the call lock (Acquire, AcquireRead) and apply their
// effects one at a time (Tx.Apply).
type Session struct {
	id       string
	registry *Registry
	created  time.Time

	// call is the call lock: a call that changes state holds all of its
	// weight (whole), a read-only call one unit. waiting counts the calls
	// waiting for it and held the weight held, so that a release that
	// lets a waiter in can hand over to it at once.
	call    *semaphore.Weighted
	waiting atomic.Int32
	held    atomic.Int64
	// apply is held while a call applies its effects (Tx.Apply).
	apply sync.Mutex

	mu        sync.RWMutex
	state     map[string]any
	resources map[string]any
	snapshot  []Snapshotter // resources that join transactions, in creation order
	closed    bool

	// during is what readers see instead of the session while a call
	// changes it (Committed); nil while no call changes it. frozen marks
	// a view that Committed returned.
	during *hidden
	frozen bool
}

// ID returns the session's identifier.
func (s *Session) ID() string { return s.id }

// Created returns when the session was created.
func (s *Session) Created() time.Time { return s.created }

// Get returns the current value of the STATE slice k, and whether it has one.
func Get[T any](s *Session, k Key[T]) (T, bool) {
	s.mu.RLock()
	v, ok := s.state[k.name]
	s.mu.RUnlock()
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Set replaces the value of the STATE slice k. The value must not be changed
// afterwards: snapshots share it.
func Set[T any](s *Session, k Key[T], v T) {
	s.mu.Lock()
	s.state[k.name] = v
	s.mu.Unlock()
}

// Dispatch hands ev to every reducer registered for its type. A reducer that returns an error or panics leaves its
// slice unchanged and its error is returned; inside a transaction the caller
// then restores the snapshot, undoing reducers that ran before it.
func (s *Session) Dispatch(ev any) (err error) {
	t := reflect.TypeOf(ev)
	for _, r := range s.registry.reducers[t] {
		if err := s.reduce(r, ev); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) reduce(r reducer, ev any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reducer for %s on slice %q panicked: %v", reflect.TypeOf(ev), r.slice, p)
		}
	}()
	s.mu.RLock()
	old, ok := s.state[r.slice]
	s.mu.RUnlock()
	v, err := r.fn(old, ok, ev)
	if err != nil {
		return fmt.Errorf("reducer for %s on slice %q: %w", reflect.TypeOf(ev), r.slice, err)
	}
	s.mu.Lock()
	s.state[r.slice] = v
	s.mu.Unlock()
	return nil
}

// Resource returns the per-session or shared resource registered under k.
func Resource[T any](s *Session, k ResourceKey[T]) (T, bool) {
	s.mu.RLock()
	v, ok := s.resources[k.name]
	s.mu.RUnlock()
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Attach returns the session's resource k, creating it with create on
// first use. It is for state that a server component keeps per session
// outside STATE slices, such as a rate limiter or a result cache:
// it lives as long as the session, joins no transaction and is not closed
// with the session. create runs at most once per session and must not use
// the session.
func Attach[T any](s *Session, k ResourceKey[T], create func() T) T {
	s.mu.RLock()
	v, ok := s.resources[k.name]
	s.mu.RUnlock()
	if ok {
		return v.(T)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.resources[k.name]; ok {
		return v.(T)
	}
	nv := create()
	s.resources[k.name] = nv
	return nv
}

// Close releases the session's per-session resources that implement
// io.Closer. Closing twice is harmless, and closing a view (Committed)
// does nothing: its resources are the session's.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed || s.frozen {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	res := s.resources
	s.mu.Unlock()
	var errs []error
	for _, p := range s.registry.providers {
		if !p.perSession {
			continue
		}
		if c, ok := res[p.name].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
