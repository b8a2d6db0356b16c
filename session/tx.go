package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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

// Acquire waits until no other call of the session is between its policy
// check and its commit or restore, or until ctx is done. Each successful
// Acquire must be followed by one Release.
func (s *Session) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.call.TryAcquire(1) {
		return nil // uncontended, without waiting on ctx
	}
	return s.call.Acquire(ctx, 1)
}

// Release lets the next call of the session proceed.
func (s *Session) Release() { s.call.Release(1) }

// Tx is one call's transaction: a snapshot of every STATE slice and of every
// resource that implements Snapshotter. It ends with Commit or Rollback.
type Tx struct {
	s         *Session
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

// Begin snapshots the session. The caller should hold the call lock
// (Acquire) so that no other call changes state under the snapshot.
func (s *Session) Begin() (*Tx, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	tx := &Tx{s: s, state: maps.Clone(s.state)}
	snap := s.snapshot
	s.mu.RUnlock()
	for _, sn := range snap {
		r, err := sn.Snapshot()
		if err != nil {
			_ = tx.Rollback()
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		tx.restorers = append(tx.restorers, r)
	}
	return tx, nil
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
	_ = tx.closePerCall()
}

// Rollback restores every STATE slice and resource to its value at Begin:
// slices created since are emptied. Resources are restored in reverse
// order of their snapshots; all of them are tried even if one fails.
func (tx *Tx) Rollback() error {
	if tx.done {
		return nil
	}
	tx.done = true
	tx.s.mu.Lock()
	tx.s.state = tx.state
	tx.s.mu.Unlock()
	var errs []error
	for _, r := range slices.Backward(tx.restorers) {
		errs = append(errs, r.Restore())
	}
	errs = append(errs, tx.closePerCall())
	return errors.Join(errs...)
}
