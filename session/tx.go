package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
)

// Snapshotter is a resource whose changes a transaction covers, such as a
// workspace. Snapshot must be cheap: it is taken before every call.
type Snapshotter interface {
	// Snapshot records the resource's current state and returns the way
	// back to it.
	Snapshot() (Restorer, error)
}

// Restorer undoes, or keeps, what happened to a resource since its snapshot.
// Exactly one of its methods is called.
type Restorer interface {
	// Restore puts the resource back as it was at the snapshot.
	Restore() error
	// Release keeps the changes and frees what the snapshot held.
	Release()
}

// whole is the weight of the call lock, which a call that changes state
// takes all of; a read-only call takes one unit.
const whole = 1 << 40

// Acquire waits until no other call of the session is between its policy
// check and its commit or restore, or until ctx is done; it is for a call
// that changes state. Each successful Acquire must be followed by one
// Release. Waiting calls get the lock in the order they asked for it,
// read-only ones included.
func (s *Session) Acquire(ctx context.Context) error { return s.lock(ctx, whole) }

// Release lets the next call of the session proceed.
func (s *Session) Release() { s.unlock(whole) }

// AcquireRead waits until no call of the session that changes state is
// between its policy check and its commit or restore, or until ctx is
// done; it is for a read-only call, and read-only calls hold it together.
// A call that changes state waiting for the lock goes before read-only
// calls that ask after it. Each successful AcquireRead must be followed by
// one ReleaseRead.
func (s *Session) AcquireRead(ctx context.Context) error { return s.lock(ctx, 1) }

// ReleaseRead ends a read-only call's hold of the lock.
func (s *Session) ReleaseRead() { s.unlock(1) }

func (s *Session) lock(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.call.TryAcquire(n) { // uncontended, without waiting on ctx
		s.waiting.Add(1)
		err := s.call.Acquire(ctx, n)
		s.waiting.Add(-1)
		if err != nil {
			return err
		}
	}
	s.held.Add(n)
	return nil
}

// unlock releases n of the lock. When that frees it while calls wait,
// the goroutine yields: the waiter just woken runs at once on this thread,
// rather than once this call has done the rest of its work (answering the
// client), which would leave the lock unused meanwhile.
func (s *Session) unlock(n int64) {
	free := s.held.Add(-n) == 0
	s.call.Release(n)
	if free && s.waiting.Load() > 0 {
		runtime.Gosched()
	}
}

// Tx is one call's transaction. That of a call that changes state (Begin)
// holds a snapshot of every STATE slice and of every resource that
// implements Snapshotter; that of a read-only call (BeginRead) holds none.
// It ends with Commit or Rollback.
type Tx struct {
	s         *Session
	read      bool
	state     map[string]any
	restorers []Restorer
	perCall   map[string]any
	done      bool
}

// CallResource returns the per-call resource registered under k with
// ProvidePerCall, creating it on first use within tx. It falls back to the
// session's per-session or shared resource of that name.
func CallResource[T any](tx *Tx, k ResourceKey[T]) (T, error) {
	var zero T
	factory, ok := tx.s.registry.perCall[k.name]
	if !ok {
		if v, ok := Resource(tx.s, k); ok {
			return v, nil
		}
		return zero, fmt.Errorf("no resource %q", k.name)
	}
	if v, ok := tx.perCall[k.name]; ok {
		return v.(T), nil
	}
	v, err := factory(tx.s)
	if err != nil {
		return zero, fmt.Errorf("resource %q: %w", k.name, err)
	}
	if tx.perCall == nil {
		tx.perCall = map[string]any{}
	}
	tx.perCall[k.name] = v
	return v.(T), nil
}

// closePerCall closes the per-call resources that implement io.Closer.
func (tx *Tx) closePerCall() error {
	var errs []error
	for _, v := range tx.perCall {
		if c, ok := v.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	tx.perCall = nil
	return errors.Join(errs...)
}

// Begin snapshots the session for a call that changes state. The caller
// should hold the call lock (Acquire) so that no other call changes state
// under the snapshot.
//
// Until the transaction ends, readers of the session (Committed) see it as
// it is now, not the call's changes.
func (s *Session) Begin() (*Tx, error) {
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	tx := &Tx{s: s, state: maps.Clone(s.state)}
	h := &hidden{state: tx.state}
	s.hide(h)
	snap := s.snapshot
	s.mu.Unlock()
	for _, sn := range snap {
		r, err := sn.Snapshot()
		if err != nil {
			_ = tx.Rollback()
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		tx.restorers = append(tx.restorers, r)
	}
	s.mu.Lock()
	h.restorers = tx.restorers
	s.mu.Unlock()
	return tx, nil
}

// BeginRead starts the transaction of a read-only call, which holds the
// call lock with other read-only calls (AcquireRead). It takes no
// snapshot: such a call changes the session only in Apply, which undoes
// its own changes if it fails, and a snapshot restored would undo those of
// the read-only calls that applied theirs meanwhile.
func (s *Session) BeginRead() (*Tx, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	return &Tx{s: s, read: true}, nil
}

// usable returns why no call can begin on s, if one cannot: it is closed,
// or it is a view. The caller holds s.mu.
func (s *Session) usable() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.frozen:
		return ErrView
	}
	return nil
}

// Apply runs fn, which records what the call did once it has succeeded
// (the policies' memory, the commit to a store), and returns its error.
// The calls of a session apply one at a time, read-only calls included,
// so that fn sees no other call's effects half recorded. When fn fails or
// panics in a read-only call's transaction, the STATE slices are restored
// as they were before fn; in that of a call that changes state, Rollback
// restores them. Meanwhile readers (Committed) see the slices as they
// were before fn.
func (tx *Tx) Apply(fn func() error) error {
	tx.s.apply.Lock()
	defer tx.s.apply.Unlock()
	if !tx.read {
		return fn()
	}
	tx.s.mu.Lock()
	before, applied := maps.Clone(tx.s.state), false
	tx.s.hide(&hidden{state: before})
	tx.s.mu.Unlock()
	defer func() {
		tx.s.mu.Lock()
		if !applied {
			// A copy: before is what readers were shown, and stays so
			// for the views made of it.
			tx.s.state = maps.Clone(before)
		}
		tx.s.during = nil
		tx.s.mu.Unlock()
	}()
	err := fn()
	applied = err == nil
	return err
}

// Session returns the session the transaction belongs to.
func (tx *Tx) Session() *Session { return tx.s }

// Commit keeps every change made since Begin.
func (tx *Tx) Commit() {
	if tx.done {
		return
	}
	tx.done = true
	for _, r := range tx.restorers {
		r.Release()
	}
	if !tx.read {
		tx.s.show()
	}
	_ = tx.closePerCall()
}

// Rollback restores every STATE slice and resource to its value at Begin:
// slices created since are emptied. Resources are restored in reverse
// order of their snapshots; all of them are tried even if one fails. A
// read-only call's transaction has nothing to restore.
func (tx *Tx) Rollback() error {
	if tx.done {
		return nil
	}
	tx.done = true
	if !tx.read {
		tx.s.mu.Lock()
		tx.s.state = tx.state
		tx.s.mu.Unlock()
	}
	var errs []error
	for _, r := range slices.Backward(tx.restorers) {
		errs = append(errs, r.Restore())
	}
	if !tx.read {
		tx.s.show()
	}
	errs = append(errs, tx.closePerCall())
	return errors.Join(errs...)
}
