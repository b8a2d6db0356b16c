package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
)

// written is a store that records every blob committed to it.
type written struct {
	store.Store
	mu     sync.Mutex
	hashes map[string]bool
}

func (w *written) Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error) {
	w.mu.Lock()
	for h := range blobs {
		w.hashes[h] = true
	}
	w.mu.Unlock()
	return w.Store.Commit(ctx, session, rev, head, blobs)
}

// reclaimSessions returns sessions on st whose state is one persisted
// slice, and that slice's key.
func reclaimSessions(st store.Store, ttl time.Duration) (*Manager, session.Key[string]) {
	r := session.NewRegistry()
	k := session.NewKey[string]("file")
	session.Persist(r, k, session.JSON[string]())
	return newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: ttl}), k
}

// TestSweepKeepsOnlyLiveBlobs: after many commits that each overwrite the
// one slice of a session with a value too large for its head, the store
// holds only the blobs its head uses. Commits of small values leave
// nothing to sweep.
func TestSweepKeepsOnlyLiveBlobs(t *testing.T) {
	st := &written{Store: store.NewMemory(store.Options{}), hashes: map[string]bool{}}
	m, file := reclaimSessions(st, time.Minute)
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		session.Set(u.Session, file, fmt.Sprint("small ", i))
		if err := u.Commit(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.hashes) != 0 {
		t.Fatalf("commits of a small value wrote %d blobs", len(st.hashes))
	}
	for i := range sweepAfter {
		session.Set(u.Session, file, fmt.Sprint(i, strings.Repeat("x", statetree.InlineMax)))
		if err := u.Commit(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	u.Release()
	defer m.Close()

	sh, err := st.Load(ctx, u.Handle)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := parseHead(sh.Data)
	if err != nil {
		t.Fatal(err)
	}
	live, err := statetree.Live(hd.Doc, func(h string) ([]byte, error) { return st.Blob(ctx, u.Handle, h) })
	if err != nil {
		t.Fatal(err)
	}
	if len(st.hashes) < sweepAfter {
		t.Fatalf("%d blobs written, want at least %d", len(st.hashes), sweepAfter)
	}
	// The sweep runs off the call's path: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stored := 0
		for h := range st.hashes {
			_, err := st.Blob(ctx, u.Handle, h)
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, store.ErrNotFound):
				t.Fatal(err)
			case live[h]:
				t.Fatalf("blob %s is used and was swept", h)
			}
		}
		if stored == len(live) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blobs stored, want the %d the head uses", stored, len(live))
		}
	}
}

// TestExpireSparesSessionsInUse: the ticker has the store expire a session
// idle longer than the TTL that no process holds, and not one in use here,
// which never commits.
func TestExpireSparesSessionsInUse(t *testing.T) {
	const ttl = 200 * time.Millisecond
	st := store.NewMemory(store.Options{})
	ctx := context.Background()
	other, _ := reclaimSessions(st, ttl) // a process gone, no ticker
	idle, err := other.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	m, _ := reclaimSessions(st, ttl)
	busy, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release()
	m.expireEvery(ttl / 10)
	defer m.Close()

	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := st.Load(ctx, idle.Handle); errors.Is(err, store.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session was never expired")
		}
		time.Sleep(ttl / 10)
	}
	time.Sleep(3 * ttl) // several more ticks
	if _, err := st.Load(ctx, busy.Handle); err != nil {
		t.Fatalf("the session in use: %v", err)
	}
}

func TestSweepDue(t *testing.T) {
	for _, tt := range []struct {
		name         string
		written      int
		writtenBytes int64
		due          bool
	}{
		{"nothing written", 0, 0, false},
		{"a few small blobs", sweepAfter - 1, sweepAfterBytes - 1, false},
		{"enough small blobs", sweepAfter, sweepAfterBytes - 1, true},
		{"a few large blobs", 40, sweepAfterBytes, true},
	} {
		e := &entry{written: tt.written, writtenBytes: tt.writtenBytes}
		if got := e.sweepDue(); got != tt.due {
			t.Errorf("%s: due %v, want %v", tt.name, got, tt.due)
		}
	}
}
