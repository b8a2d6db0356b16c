package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitForWaiters polls until n calls wait for the call lock of s.
func waitForWaiters(t *testing.T, s *Session, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.waiting.Load() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait for the lock, want %d", s.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// expired returns a context that is already done.
func expired() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	cancel()
	return ctx
}

func newTestSession(t *testing.T) *Session {
	t.Helper()
	s, err := NewRegistry().NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestReadOnlyCallsShareTheLock: read-only calls hold the call lock
// together, a call that changes state alone.
func TestReadOnlyCallsShareTheLock(t *testing.T) {
	s := newTestSession(t)
	ctx := context.Background()
	for range 3 {
		if err := s.AcquireRead(ctx); err != nil {
			t.Fatalf("AcquireRead while read-only calls hold the lock = %v", err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := s.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while read-only calls hold the lock = %v, want its deadline", err)
	}
	for range 3 {
		s.ReleaseRead()
	}
	if err := s.Acquire(ctx); err != nil {
		t.Fatalf("Acquire once they are done = %v", err)
	}
	read, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.AcquireRead(read) }()
	waitForWaiters(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireRead while a call that changes state holds the lock = %v, want context.Canceled", err)
	}
	s.Release()
	if err := s.AcquireRead(expired()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AcquireRead with its context done = %v, want its error even with the lock free", err)
	}
}

// TestWaitingWriterGoesFirst: once a call that changes state waits for
// the lock, read-only calls that ask after it wait behind it, so that
// readers never starve a writer; they all get in once it is done.
func TestWaitingWriterGoesFirst(t *testing.T) {
	s := newTestSession(t)
	ctx := context.Background()
	if err := s.AcquireRead(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	var mu sync.Mutex
	note := func(what string) {
		mu.Lock()
		order = append(order, what)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Acquire(ctx); err != nil {
			t.Error(err)
			return
		}
		note("writer")
		s.Release()
	})
	waitForWaiters(t, s, 1)
	for i := range 3 {
		wg.Go(func() {
			if err := s.AcquireRead(ctx); err != nil {
				t.Error(err)
				return
			}
			note(fmt.Sprint("reader ", i))
			s.ReleaseRead()
		})
	}
	waitForWaiters(t, s, 4)
	note("first reader done")
	s.ReleaseRead()
	wg.Wait()
	if len(order) != 5 || order[0] != "first reader done" || order[1] != "writer" {
		t.Errorf("order = %q, want the first reader, then the writer, then the others", order)
	}
}

// TestReadOnlyApply: read-only calls apply their changes one at a time,
// so none is lost, and the one that fails or panics in Apply, or is
// rolled back, undoes nothing of what the others applied, before or after
// it began.
func TestReadOnlyApply(t *testing.T) {
	s := newTestSession(t)
	marks := NewKey[[]int]("test.marks")
	mark := func(i int) {
		old, _ := Get(s, marks)
		Set(s, marks, append(slices.Clone(old), i))
	}
	errUnlucky := errors.New("unlucky")
	var want []int
	var wg sync.WaitGroup
	for i := range 64 {
		fails, panics, rolledBack := i%4 == 1, i%4 == 2, i%4 == 3
		if !fails && !panics && !rolledBack {
			want = append(want, i)
		}
		wg.Go(func() {
			if err := s.AcquireRead(context.Background()); err != nil {
				t.Error(err)
				return
			}
			defer s.ReleaseRead()
			tx, err := s.BeginRead()
			if err != nil {
				t.Error(err)
				return
			}
			if rolledBack {
				// Failed before Apply: nothing of its own to undo.
				if err := tx.Rollback(); err != nil {
					t.Error(err)
				}
				return
			}
			err = func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				return tx.Apply(func() error {
					mark(i)
					switch {
					case fails:
						return errUnlucky
					case panics:
						panic("kaboom")
					}
					return nil
				})
			}()
			if err != nil {
				if err := tx.Rollback(); err != nil {
					t.Error(err)
				}
				return
			}
			tx.Commit()
		})
	}
	wg.Wait()
	got, _ := Get(s, marks)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("marks = %v\nwant %v", got, want)
	}
}

// TestReadOnlyRollbackKeepsOthers: a read-only call that began before
// another applied its change, then failed, leaves that change in place.
func TestReadOnlyRollbackKeepsOthers(t *testing.T) {
	s := newTestSession(t)
	n := NewKey[int]("test.n")
	failing, err := s.BeginRead()
	if err != nil {
		t.Fatal(err)
	}
	applying, err := s.BeginRead()
	if err != nil {
		t.Fatal(err)
	}
	if err := applying.Apply(func() error { Set(s, n, 1); return nil }); err != nil {
		t.Fatal(err)
	}
	applying.Commit()
	if err := failing.Rollback(); err != nil {
		t.Fatal(err)
	}
	if v, ok := Get(s, n); v != 1 || !ok {
		t.Errorf("n = %d, %v after another read-only call's rollback, want 1, true", v, ok)
	}
}

// TestWriterApplyIsRolledBack: in the transaction of a call that changes
// state, Apply leaves a failure to Rollback, which restores the snapshot
// of Begin.
func TestWriterApplyIsRolledBack(t *testing.T) {
	s := newTestSession(t)
	n := NewKey[int]("test.n")
	Set(s, n, 1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	Set(s, n, 2)
	errUnlucky := errors.New("unlucky")
	if err := tx.Apply(func() error { Set(s, n, 3); return errUnlucky }); err != errUnlucky {
		t.Fatalf("Apply = %v, want %v", err, errUnlucky)
	}
	if v, _ := Get(s, n); v != 3 {
		t.Errorf("n = %d after a failed Apply, want 3 until Rollback", v)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if v, _ := Get(s, n); v != 1 {
		t.Errorf("n = %d after Rollback, want 1", v)
	}
}

func TestBeginReadOnClosedSession(t *testing.T) {
	s := newTestSession(t)
	_ = s.Close()
	if _, err := s.BeginRead(); !errors.Is(err, ErrClosed) {
		t.Errorf("BeginRead on a closed session = %v, want ErrClosed", err)
	}
}
