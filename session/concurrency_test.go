package session_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// bumped is dispatched once per call; its reducer folds it into a running
// hash, so the final value depends on the order calls committed in.
type bumped struct{ g, i int }

// tally is a per-session resource that joins transactions. Only calls that
// hold the session's lock touch it, so the race detector reports it if
// Acquire does not serialise them.
type tally struct{ n int }

func (t *tally) Snapshot() (session.Restorer, error) { return &tallyRestorer{t: t, n: t.n}, nil }

type tallyRestorer struct {
	t *tally
	n int
}

func (r *tallyRestorer) Restore() error { r.t.n = r.n; return nil }
func (r *tallyRestorer) Release()       {}

type op struct {
	g, i   int
	commit bool
}

// TestConcurrentCallsOnOneSession runs many goroutines that each make calls
// on one session the way the pipeline does (Acquire, Begin, change state,
// Commit or Rollback, Release), while readers look at the state, and checks
// that the final state is the one a sequential replay of the calls, in the
// order they held the lock, produces.
func TestConcurrentCallsOnOneSession(t *testing.T) {
	const goroutines, calls = 16, 60
	hash := session.NewKey[uint64]("test.hash")
	commits := session.NewKey[int]("test.commits")
	last := func(g int) session.Key[int] { return session.NewKey[int](fmt.Sprintf("test.last.%d", g)) }
	tallyKey := session.NewResourceKey[*tally]("tally")

	fold := func(h uint64, g, i int) uint64 { return h*31 + uint64(g*1000+i) + 1 }
	r := session.NewRegistry()
	session.On(r, hash, func(old uint64, ok bool, ev bumped) (uint64, error) { return fold(old, ev.g, ev.i), nil })
	session.Provide(r, tallyKey, func(*session.Session) (*tally, error) { return &tally{}, nil })
	s := newSession(t, r, "shared")
	tl, _ := session.Resource(s, tallyKey)

	var (
		inside atomic.Int32
		order  []op // appended under the session's lock only
		wg     sync.WaitGroup
		errs   = make(chan error, goroutines*calls)
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				if err := s.Acquire(context.Background()); err != nil {
					errs <- err
					return
				}
				if n := inside.Add(1); n != 1 {
					errs <- fmt.Errorf("%d calls inside the lock at once", n)
				}
				tx, err := s.Begin()
				if err != nil {
					errs <- err
					inside.Add(-1)
					s.Release()
					return
				}
				if err := s.Dispatch(bumped{g, i}); err != nil {
					errs <- err
				}
				n, _ := session.Get(s, commits)
				session.Set(s, commits, n+1)
				session.Set(s, last(g), i)
				tl.n++
				commit := (g+i)%3 != 0
				if commit {
					tx.Commit()
				} else if err := tx.Rollback(); err != nil {
					errs <- err
				}
				order = append(order, op{g, i, commit})
				inside.Add(-1)
				s.Release()
			}
		}()
	}
	// Readers need no lock.
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				session.Get(s, hash)
				session.Get(s, commits)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The sequential model.
	if len(order) != goroutines*calls {
		t.Fatalf("%d calls recorded, want %d", len(order), goroutines*calls)
	}
	var wantHash uint64
	wantCommits := 0
	wantLast := map[int]int{}
	for _, o := range order {
		if !o.commit {
			continue
		}
		wantHash = fold(wantHash, o.g, o.i)
		wantCommits++
		wantLast[o.g] = o.i
	}
	if got, _ := session.Get(s, hash); got != wantHash {
		t.Errorf("hash = %d, want %d", got, wantHash)
	}
	if got, _ := session.Get(s, commits); got != wantCommits {
		t.Errorf("commits = %d, want %d", got, wantCommits)
	}
	if tl.n != wantCommits {
		t.Errorf("resource tally = %d, want %d", tl.n, wantCommits)
	}
	for g := range goroutines {
		got, ok := session.Get(s, last(g))
		want, wantOK := wantLast[g]
		if got != want || ok != wantOK {
			t.Errorf("last(%d) = %d, %v; want %d, %v", g, got, ok, want, wantOK)
		}
	}
}

// TestSessionsRunInParallel holds one session's lock while another session
// runs a whole call: sessions never wait for each other.
func TestSessionsRunInParallel(t *testing.T) {
	r := session.NewRegistry()
	a := newSession(t, r, "a")
	b := newSession(t, r, "b")
	if err := a.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			defer b.Release()
			tx, err := b.Begin()
			if err != nil {
				t.Error(err)
				return
			}
			n, _ := session.Get(b, counter)
			session.Set(b, counter, n+1)
			tx.Commit()
		}()
	}
	wg.Wait()
	if n, _ := session.Get(b, counter); n != 8 {
		t.Errorf("b counter = %d, want 8", n)
	}
	if _, ok := session.Get(a, counter); ok {
		t.Error("a call on session b changed session a")
	}
}
