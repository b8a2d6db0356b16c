package session_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

var (
	counter = session.NewKey[int]("test.counter")
	names   = session.NewKey[[]string]("test.names")
	label   = session.NewKey[string]("test.label")
)

func newSession(t testing.TB, r *session.Registry, id string) *session.Session {
	t.Helper()
	s, err := r.NewSession(id)
	if err != nil {
		t.Fatalf("NewSession(%q): %v", id, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func begin(t testing.TB, s *session.Session) *session.Tx {
	t.Helper()
	tx, err := s.Begin()
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return tx
}

func TestKeyNames(t *testing.T) {
	if got := session.NewKey[int]("a.b").Name(); got != "a.b" {
		t.Errorf("Key.Name() = %q", got)
	}
	if got := session.NewResourceKey[int]("d").Name(); got != "d" {
		t.Errorf("ResourceKey.Name() = %q", got)
	}
}

func TestSessionIdentity(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "abc")
	if s.ID() != "abc" {
		t.Errorf("ID() = %q, want abc", s.ID())
	}
	if s.Created().IsZero() {
		t.Error("Created() is zero")
	}
}

func TestGetSet(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")

	if v, ok := session.Get(s, counter); ok || v != 0 {
		t.Fatalf("Get on an empty slice = %v, %v; want 0, false", v, ok)
	}
	if v, ok := session.Get(s, names); ok || v != nil {
		t.Fatalf("Get on an empty slice = %v, %v; want nil, false", v, ok)
	}

	session.Set(s, counter, 0)
	if v, ok := session.Get(s, counter); !ok || v != 0 {
		t.Errorf("Get after Set(0) = %v, %v; want 0, true", v, ok)
	}
	session.Set(s, counter, 7)
	session.Set(s, label, "x")
	if v, _ := session.Get(s, counter); v != 7 {
		t.Errorf("counter = %v, want 7", v)
	}
	if v, _ := session.Get(s, label); v != "x" {
		t.Errorf("label = %q, want x", v)
	}
	// A key is its name: another key value with the same name and type
	// reads the same slice.
	if v, _ := session.Get(s, session.NewKey[int]("test.counter")); v != 7 {
		t.Errorf("same-name key reads %v, want 7", v)
	}

	// Sessions do not share state.
	other := newSession(t, session.NewRegistry(), "other")
	if _, ok := session.Get(other, counter); ok {
		t.Error("a new session sees another session's state")
	}
}

type appended struct{ name string }
type failing struct{ msg string }
type panicking struct{}

var errReducer = errors.New("reducer says no")

func TestReducers(t *testing.T) {
	newReg := func(trace *[]string) *session.Registry {
		r := session.NewRegistry()
		// Two reducers on the same slice: they run in registration order,
		// each seeing the value the previous one returned.
		session.On(r, names, func(old []string, ok bool, ev appended) ([]string, error) {
			*trace = append(*trace, fmt.Sprintf("first ok=%v len=%d", ok, len(old)))
			return append(slices.Clone(old), ev.name), nil
		})
		session.On(r, names, func(old []string, ok bool, ev appended) ([]string, error) {
			*trace = append(*trace, fmt.Sprintf("second ok=%v len=%d", ok, len(old)))
			return append(slices.Clone(old), strings.ToUpper(ev.name)), nil
		})
		session.On(r, counter, func(old int, ok bool, ev appended) (int, error) {
			*trace = append(*trace, "counter")
			return old + 1, nil
		})
		session.On(r, counter, func(old int, ok bool, ev failing) (int, error) {
			*trace = append(*trace, "counter-before-failure")
			return old + 100, nil
		})
		session.On(r, label, func(old string, ok bool, ev failing) (string, error) {
			*trace = append(*trace, "failing")
			return "changed", fmt.Errorf("%s: %w", ev.msg, errReducer)
		})
		session.On(r, label, func(old string, ok bool, ev failing) (string, error) {
			*trace = append(*trace, "after-failing")
			return "changed-later", nil
		})
		session.On(r, label, func(old string, ok bool, ev panicking) (string, error) {
			*trace = append(*trace, "panicking")
			panic("boom")
		})
		session.On(r, label, func(old string, ok bool, ev panicking) (string, error) {
			*trace = append(*trace, "after-panicking")
			return "changed-later", nil
		})
		return r
	}

	tests := []struct {
		name        string
		events      []any
		wantErr     string // substring; "" means no error from the last event
		wantIs      error
		wantTrace   []string // of the last event
		wantNames   []string
		wantCounter int
		wantLabel   string
	}{
		{
			name:        "reducers replace the slice in registration order",
			events:      []any{appended{"a"}},
			wantTrace:   []string{"first ok=false len=0", "second ok=true len=1", "counter"},
			wantNames:   []string{"a", "A"},
			wantCounter: 1,
			wantLabel:   "start",
		},
		{
			name:        "second event sees the first's result",
			events:      []any{appended{"a"}, appended{"b"}},
			wantTrace:   []string{"first ok=true len=2", "second ok=true len=3", "counter"},
			wantNames:   []string{"a", "A", "b", "B"},
			wantCounter: 2,
			wantLabel:   "start",
		},
		{
			name:        "an event without reducers changes nothing",
			events:      []any{42},
			wantTrace:   nil,
			wantCounter: 0,
			wantLabel:   "start",
		},
		{
			name:        "an erring reducer leaves its slice unchanged and stops dispatch",
			events:      []any{failing{"bad input"}},
			wantErr:     "bad input: reducer says no",
			wantIs:      errReducer,
			wantTrace:   []string{"counter-before-failure", "failing"},
			wantCounter: 100, // reducers before it ran; the transaction undoes them
			wantLabel:   "start",
		},
		{
			name:        "a panicking reducer leaves its slice unchanged and stops dispatch",
			events:      []any{panicking{}},
			wantErr:     "panicked: boom",
			wantTrace:   []string{"panicking"},
			wantCounter: 0,
			wantLabel:   "start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			s := newSession(t, newReg(&trace), "s")
			session.Set(s, label, "start")
			var err error
			for _, ev := range tt.events {
				trace = nil
				err = s.Dispatch(ev)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Dispatch: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Dispatch succeeded, want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("Dispatch error %q does not contain %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Dispatch error %v does not wrap %v", err, tt.wantIs)
			}
			if !slices.Equal(trace, tt.wantTrace) {
				t.Errorf("trace = %q, want %q", trace, tt.wantTrace)
			}
			if got, _ := session.Get(s, names); !slices.Equal(got, tt.wantNames) {
				t.Errorf("names = %q, want %q", got, tt.wantNames)
			}
			if got, _ := session.Get(s, counter); got != tt.wantCounter {
				t.Errorf("counter = %d, want %d", got, tt.wantCounter)
			}
			if got, _ := session.Get(s, label); got != tt.wantLabel {
				t.Errorf("label = %q, want %q", got, tt.wantLabel)
			}
		})
	}
}

func TestReducerFailureRolledBackByTransaction(t *testing.T) {
	r := session.NewRegistry()
	session.On(r, counter, func(old int, ok bool, ev appended) (int, error) { return old + 1, nil })
	session.On(r, label, func(old string, ok bool, ev appended) (string, error) {
		if ev.name == "bad" {
			return "", errReducer
		}
		return ev.name, nil
	})
	s := newSession(t, r, "s")
	if err := s.Dispatch(appended{"good"}); err != nil {
		t.Fatal(err)
	}
	tx := begin(t, s)
	if err := s.Dispatch(appended{"bad"}); !errors.Is(err, errReducer) {
		t.Fatalf("Dispatch = %v, want %v", err, errReducer)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got, _ := session.Get(s, counter); got != 1 {
		t.Errorf("counter = %d after rollback, want 1", got)
	}
	if got, _ := session.Get(s, label); got != "good" {
		t.Errorf("label = %q after rollback, want good", got)
	}
}

func TestRollback(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	session.Set(s, counter, 1)
	session.Set(s, names, []string{"a"})

	tx := begin(t, s)
	if tx.Session() != s {
		t.Error("Tx.Session() is not the session")
	}
	session.Set(s, counter, 2)
	session.Set(s, names, []string{"a", "b"})
	session.Set(s, label, "created after Begin")
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}

	if v, ok := session.Get(s, counter); !ok || v != 1 {
		t.Errorf("counter = %v, %v; want 1, true", v, ok)
	}
	if v, _ := session.Get(s, names); !slices.Equal(v, []string{"a"}) {
		t.Errorf("names = %q, want [a]", v)
	}
	if v, ok := session.Get(s, label); ok {
		t.Errorf("label created after Begin survives Rollback as %q", v)
	}

	// The session keeps working after a rollback, and a second Rollback or
	// a Commit of the finished transaction does nothing.
	session.Set(s, counter, 5)
	if err := tx.Rollback(); err != nil {
		t.Errorf("second Rollback: %v", err)
	}
	tx.Commit()
	if v, _ := session.Get(s, counter); v != 5 {
		t.Errorf("finished transaction changed state: counter = %d, want 5", v)
	}
}

func TestCommit(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	session.Set(s, counter, 1)
	tx := begin(t, s)
	session.Set(s, counter, 2)
	session.Set(s, label, "new")
	tx.Commit()
	if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback after Commit: %v", err)
	}
	if v, _ := session.Get(s, counter); v != 2 {
		t.Errorf("counter = %d, want 2", v)
	}
	if v, ok := session.Get(s, label); !ok || v != "new" {
		t.Errorf("label = %q, %v; want new, true", v, ok)
	}

	// A later transaction snapshots the committed state.
	tx = begin(t, s)
	session.Set(s, counter, 3)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if v, _ := session.Get(s, counter); v != 2 {
		t.Errorf("counter = %d after rolling back the next call, want 2", v)
	}
}

// journal is a resource that joins transactions and records what the
// transaction does with it in a shared trace.
type journal struct {
	name       string
	trace      *[]string
	value      int
	snapErr    error
	restoreErr error
	closed     int
}

func (j *journal) Snapshot() (session.Restorer, error) {
	*j.trace = append(*j.trace, "snapshot "+j.name)
	if j.snapErr != nil {
		return nil, j.snapErr
	}
	return &journalRestorer{j: j, value: j.value}, nil
}

func (j *journal) Close() error {
	j.closed++
	return nil
}

type journalRestorer struct {
	j     *journal
	value int
}

func (r *journalRestorer) Restore() error {
	*r.j.trace = append(*r.j.trace, "restore "+r.j.name)
	r.j.value = r.value
	return r.j.restoreErr
}

func (r *journalRestorer) Release() {
	*r.j.trace = append(*r.j.trace, "release "+r.j.name)
}

var (
	resA   = session.NewResourceKey[*journal]("a")
	resB   = session.NewResourceKey[*journal]("b")
	resC   = session.NewResourceKey[*journal]("c")
	shared = session.NewResourceKey[*journal]("shared")
)

func TestSnapshotters(t *testing.T) {
	errSnap := errors.New("cannot snapshot")
	errRestore := errors.New("cannot restore")
	tests := []struct {
		name       string
		failSnap   string // resource whose Snapshot fails
		failRest   string // resource whose Restore fails
		commit     bool
		wantBegin  error
		wantRollbk error
		wantTrace  []string
		wantValues [3]int
	}{
		{
			name:       "rollback restores in reverse order",
			wantTrace:  []string{"snapshot a", "snapshot shared", "snapshot c", "restore c", "restore shared", "restore a"},
			wantValues: [3]int{0, 0, 0},
		},
		{
			name:       "commit releases and keeps changes",
			commit:     true,
			wantTrace:  []string{"snapshot a", "snapshot shared", "snapshot c", "release a", "release shared", "release c"},
			wantValues: [3]int{1, 1, 1},
		},
		{
			name:       "a failing restore does not stop the others",
			failRest:   "shared",
			wantRollbk: errRestore,
			wantTrace:  []string{"snapshot a", "snapshot shared", "snapshot c", "restore c", "restore shared", "restore a"},
			wantValues: [3]int{0, 0, 0},
		},
		{
			name:       "a failing snapshot fails Begin and restores the ones taken",
			failSnap:   "c",
			wantBegin:  errSnap,
			wantTrace:  []string{"snapshot a", "snapshot shared", "snapshot c", "restore shared", "restore a"},
			wantValues: [3]int{0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			mk := func(name string) *journal {
				j := &journal{name: name, trace: &trace}
				if name == tt.failSnap {
					j.snapErr = errSnap
				}
				if name == tt.failRest {
					j.restoreErr = errRestore
				}
				return j
			}
			r := session.NewRegistry()
			session.Provide(r, resA, func(*session.Session) (*journal, error) { return mk("a"), nil })
			session.Share(r, shared, mk("shared"))
			// A resource that does not implement Snapshotter is ignored.
			session.Provide(r, session.NewResourceKey[string]("plain"), func(*session.Session) (string, error) { return "x", nil })
			session.Provide(r, resC, func(*session.Session) (*journal, error) { return mk("c"), nil })
			s := newSession(t, r, "s")
			js := [3]*journal{}
			for i, k := range []session.ResourceKey[*journal]{resA, shared, resC} {
				j, ok := session.Resource(s, k)
				if !ok {
					t.Fatalf("resource %s missing", k.Name())
				}
				js[i] = j
			}

			session.Set(s, counter, 1)
			tx, err := s.Begin()
			if tt.wantBegin != nil {
				if !errors.Is(err, tt.wantBegin) {
					t.Fatalf("Begin = %v, want %v", err, tt.wantBegin)
				}
			} else {
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				for _, j := range js {
					j.value = 1
				}
				session.Set(s, counter, 2)
				if tt.commit {
					tx.Commit()
				} else if err := tx.Rollback(); !errors.Is(err, tt.wantRollbk) {
					t.Errorf("Rollback = %v, want %v", err, tt.wantRollbk)
				}
			}
			if !slices.Equal(trace, tt.wantTrace) {
				t.Errorf("trace =\n  %q\nwant\n  %q", trace, tt.wantTrace)
			}
			for i, j := range js {
				if j.value != tt.wantValues[i] {
					t.Errorf("resource %s value = %d, want %d", j.name, j.value, tt.wantValues[i])
				}
			}
		})
	}
}

func TestBeginOnClosedSession(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin()
	if !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Begin on a closed session = %v, %v; want ErrClosed", tx, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestResources(t *testing.T) {
	var trace []string
	var made []*session.Session
	r := session.NewRegistry()
	session.Provide(r, resA, func(s *session.Session) (*journal, error) {
		made = append(made, s)
		return &journal{name: "a-" + s.ID(), trace: &trace}, nil
	})
	sh := &journal{name: "shared", trace: &trace}
	session.Share(r, shared, sh)

	s1 := newSession(t, r, "1")
	s2 := newSession(t, r, "2")
	if len(made) != 2 || made[0] != s1 || made[1] != s2 {
		t.Fatalf("factory called with %v, want once per session with that session", made)
	}
	a1, ok1 := session.Resource(s1, resA)
	a2, ok2 := session.Resource(s2, resA)
	if !ok1 || !ok2 || a1 == a2 || a1.name != "a-1" || a2.name != "a-2" {
		t.Fatalf("per-session resources = %v %v (%v %v), want one each", a1, a2, ok1, ok2)
	}
	sh1, _ := session.Resource(s1, shared)
	sh2, _ := session.Resource(s2, shared)
	if sh1 != sh || sh2 != sh {
		t.Errorf("shared resource differs between sessions: %p %p, want %p", sh1, sh2, sh)
	}
	if _, ok := session.Resource(s1, session.NewResourceKey[int]("absent")); ok {
		t.Error("Resource found an unregistered key")
	}

	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if a1.closed != 1 || a2.closed != 0 {
		t.Errorf("after closing session 1: closed = %d, %d; want 1, 0", a1.closed, a2.closed)
	}
	if sh.closed != 0 {
		t.Error("closing a session closed the shared resource")
	}
	_ = s1.Close()
	if a1.closed != 1 {
		t.Errorf("closing twice closed the resource %d times", a1.closed)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if a2.closed != 1 || sh.closed != 0 {
		t.Errorf("after closing session 2: closed = %d (shared %d), want 1 (shared 0)", a2.closed, sh.closed)
	}
}

type closeErr struct{ err error }

func (c closeErr) Close() error { return c.err }

func TestCloseReportsErrors(t *testing.T) {
	errClose := errors.New("close failed")
	r := session.NewRegistry()
	session.Provide(r, session.NewResourceKey[closeErr]("c"), func(*session.Session) (closeErr, error) {
		return closeErr{errClose}, nil
	})
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, errClose) {
		t.Errorf("Close = %v, want %v", err, errClose)
	}
}

func TestResourceFactoryError(t *testing.T) {
	var trace []string
	first := &journal{name: "first", trace: &trace}
	errFactory := errors.New("no store")
	r := session.NewRegistry()
	session.Provide(r, resA, func(*session.Session) (*journal, error) { return first, nil })
	session.Provide(r, resB, func(*session.Session) (*journal, error) { return nil, errFactory })
	s, err := r.NewSession("x")
	if !errors.Is(err, errFactory) || s != nil {
		t.Fatalf("NewSession = %v, %v; want nil, %v", s, err, errFactory)
	}
	if !strings.Contains(err.Error(), `resource "b"`) {
		t.Errorf("error %q does not name the resource", err)
	}
	if first.closed != 1 {
		t.Errorf("resource created before the failure closed %d times, want 1", first.closed)
	}
}

func TestAcquireExclusive(t *testing.T) {
	s := newSession(t, session.NewRegistry(), "s")
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	// While held, a second Acquire waits until its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire while held = %v, want context.Canceled", err)
	}
	s.Release()

	// Once released, the next call proceeds.
	go func() { done <- s.Acquire(context.Background()) }()
	if err := <-done; err != nil {
		t.Fatalf("Acquire after Release = %v", err)
	}
	s.Release()

	// Other sessions have their own lock.
	other := newSession(t, session.NewRegistry(), "other")
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := other.Acquire(context.Background()); err != nil {
		t.Errorf("another session's Acquire = %v while this one is held", err)
	}
	other.Release()
	s.Release()
}
