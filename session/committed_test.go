package session_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// box is a resource that holds a value of its own, joins transactions and
// freezes, as it is and as it was at a snapshot, as a memory workspace
// does.
type box struct{ v atomic.Int64 }

func (b *box) Snapshot() (session.Restorer, error) { return boxUndo{b, b.v.Load()}, nil }

func (b *box) Freeze() any {
	f := &box{}
	f.v.Store(b.v.Load())
	return f
}

type boxUndo struct {
	b *box
	v int64
}

func (u boxUndo) Restore() error { u.b.v.Store(u.v); return nil }
func (u boxUndo) Release()       {}

// Freeze is the box as it was at the snapshot.
func (u boxUndo) Freeze() any {
	f := &box{}
	f.v.Store(u.v)
	return f
}

var boxKey = session.NewResourceKey[*box]("test.box")

// seen returns what a reader of s sees: the counter and the box.
func seen(s *session.Session) (int, int64) {
	v := s.Committed()
	n, _ := session.Get(v, counter)
	b, _ := session.Resource(v, boxKey)
	return n, b.v.Load()
}

// TestCommittedHidesACallInProgress: while a call changes a session, its
// readers see the session as its last commit left it, slices and
// resources alike; once the call commits they see its changes, and once it
// rolls back, what they saw throughout.
func TestCommittedHidesACallInProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		want   int
	}{
		{"committed", true, 2},
		{"rolled back", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := session.NewRegistry()
			session.Provide(r, boxKey, func(*session.Session) (*box, error) { return &box{}, nil })
			s := newSession(t, r, "s")
			session.Set(s, counter, 1)
			b, _ := session.Resource(s, boxKey)
			b.v.Store(1)
			before := s.Committed()

			tx := begin(t, s)
			session.Set(s, counter, 2)
			b.v.Store(2)
			if n, v := seen(s); n != 1 || v != 1 {
				t.Fatalf("during the call a reader sees counter %d, box %d; want 1, 1", n, v)
			}
			if tc.commit {
				tx.Commit()
			} else if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if n, v := seen(s); n != tc.want || v != int64(tc.want) {
				t.Errorf("after the call a reader sees counter %d, box %d; want %d, %d", n, v, tc.want, tc.want)
			}
			if n, _ := session.Get(before, counter); n != 1 {
				t.Errorf("a view taken before the call holds counter %d, want 1: views never change", n)
			}
		})
	}
}

// TestCommittedHidesAFailingApply: a read-only call's Apply that fails
// leaves nothing of its changes, and readers see none of them meanwhile.
func TestCommittedHidesAFailingApply(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	session.Set(s, counter, 1)
	tx, err := s.BeginRead()
	if err != nil {
		t.Fatal(err)
	}
	var during int
	boom := errors.New("boom")
	err = tx.Apply(func() error {
		session.Set(s, counter, 2)
		during, _ = session.Get(s.Committed(), counter)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Apply = %v, want boom", err)
	}
	tx.Commit()
	if during != 1 {
		t.Errorf("a reader during Apply sees counter %d, want 1", during)
	}
	if n, _ := session.Get(s.Committed(), counter); n != 1 {
		t.Errorf("after the failed Apply a reader sees counter %d, want 1", n)
	}
}

// TestViewIsReadOnly: no call begins on a view, and closing one leaves
// the session's resources alone.
func TestViewIsReadOnly(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	v := s.Committed()
	if v.ID() != s.ID() {
		t.Errorf("view ID %q, want %q", v.ID(), s.ID())
	}
	if _, err := v.Begin(); !errors.Is(err, session.ErrView) {
		t.Errorf("Begin on a view = %v, want ErrView", err)
	}
	if _, err := v.BeginRead(); !errors.Is(err, session.ErrView) {
		t.Errorf("BeginRead on a view = %v, want ErrView", err)
	}
	if err := v.Close(); err != nil {
		t.Errorf("Close of a view = %v", err)
	}
	if _, err := s.Begin(); err != nil {
		t.Errorf("Begin on the session after its view was closed = %v", err)
	}
}
