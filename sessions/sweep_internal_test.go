package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// counted is a store that counts the blobs written and read, and the
// sweeps of either kind.
type counted struct {
	store.Store
	mu                  sync.Mutex
	written, reads      int
	fullSweeps, removes int
	removed             map[string]bool
}

func (c *counted) Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error) {
	c.mu.Lock()
	c.written += len(blobs)
	c.mu.Unlock()
	return c.Store.Commit(ctx, session, rev, head, blobs)
}

func (c *counted) Blob(ctx context.Context, session, hash string) ([]byte, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Store.Blob(ctx, session, hash)
}

func (c *counted) Sweep(ctx context.Context, session string, rev uint64, live func(hash string) bool) (store.Swept, error) {
	c.mu.Lock()
	c.fullSweeps++
	c.mu.Unlock()
	return c.Store.Sweep(ctx, session, rev, live)
}

func (c *counted) Remove(ctx context.Context, session string, rev uint64, hashes []string) (int, error) {
	c.mu.Lock()
	c.removes++
	for _, h := range hashes {
		c.removed[h] = true
	}
	c.mu.Unlock()
	return c.Store.Remove(ctx, session, rev, hashes)
}

// counts returns what c counted so far.
func (c *counted) counts() (written, reads, fullSweeps, removes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.reads, c.fullSweeps, c.removes
}

// workspaceSessions returns sessions on st with an in-memory workspace
// and a history of retention commits.
func workspaceSessions(t *testing.T, st store.Store, retention int) *Manager {
	t.Helper()
	b, err := workspace.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewRegistry()
	workspace.New(b, workspace.Options{}).Setup(r)
	m := newManager(Options{Registry: r, Store: st, TTL: time.Minute, History: retention})
	t.Cleanup(func() { m.Close() })
	return m
}

// writeFiles writes the files in one call of u's session, and commits it.
func writeFiles(t *testing.T, u *Use, call string, files map[string]string) {
	t.Helper()
	tx, err := u.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	w := workspace.From(u.Session)
	for p, c := range files {
		if err := w.WriteFile(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Commit(context.Background(), &Commit{CallID: call, Tool: "write", Tx: tx}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
}

// sweepOnce writes one file a call in u's session until its commits start
// a sweep of its blobs, and waits for the sweep to end.
func sweepOnce(t *testing.T, m *Manager, u *Use, tag string) {
	t.Helper()
	sweeping := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.sweeping[u.Handle]
	}
	for deadline := time.Now().Add(10 * time.Second); sweeping(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not end")
		}
	}
	for i := 0; !sweeping(); i++ {
		if i == 1000 {
			t.Fatal("1000 commits started no sweep")
		}
		writeFiles(t, u, fmt.Sprint(tag, i), map[string]string{fmt.Sprintf("flat/%s%04d", tag, i): strings.Repeat(tag, 256)})
	}
	for deadline := time.Now().Add(10 * time.Second); sweeping(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not end")
		}
	}
}

// storedHead returns the head of session h as st holds it.
func storedHead(t *testing.T, st store.Store, h string) head {
	t.Helper()
	sh, err := st.Load(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := readHead(h, sh.Data)
	if err != nil {
		t.Fatal(err)
	}
	return hd
}

// checkUsedStored fails t unless every blob that the head of session h
// uses (its state, and its history's) is stored, and every blob a sweep
// removed is one it does not use.
func checkUsedStored(t *testing.T, m *Manager, st *counted, h string) {
	t.Helper()
	ctx := context.Background()
	hd := storedHead(t, st, h)
	roots, get, err := m.headRoots(ctx, h, hd, heldHistory{})
	if err != nil {
		t.Fatal(err)
	}
	x := statetree.NewIndex()
	if _, err := x.Update(roots, get); err != nil {
		t.Fatalf("the head's blobs: %v", err)
	}
	live, err := statetree.Live(hd.Doc, get)
	if err != nil {
		t.Fatal(err)
	}
	for b := range live {
		if !x.Has(b) {
			t.Fatalf("blob %s is used and not in the index", b)
		}
		if _, err := st.Store.Blob(ctx, h, b); err != nil {
			t.Fatalf("blob %s is used: %v", b, err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for b := range st.removed {
		if _, err := st.Store.Blob(ctx, h, b); !x.Has(b) || err == nil {
			continue
		} else if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("blob %s is used and was removed", b)
		}
	}
}

// TestSweepReadsWhatChanged: in a session of 20,000 files in one
// directory, with a history, a sweep reads from the store no more blobs
// than the commits since the last one wrote (a walk of the tree reads
// more than 600), and looks at no other blob stored; a process that
// continues the session reads what its head uses once, then what
// changed. Nothing used is removed.
func TestSweepReadsWhatChanged(t *testing.T) {
	st := &counted{Store: store.NewMemory(store.Options{}), removed: map[string]bool{}}
	m := workspaceSessions(t, st, 20)
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	for c := range 200 {
		files := map[string]string{}
		for i := range 100 {
			files[fmt.Sprintf("flat/f%05d", c*100+i)] = fmt.Sprint("file ", c*100+i)
		}
		writeFiles(t, u, fmt.Sprint("setup", c), files)
	}
	sweepOnce(t, m, u, "a")
	written, reads, full, removes := st.counts()
	sweepOnce(t, m, u, "b")
	written2, reads2, full2, removes2 := st.counts()
	t.Logf("a sweep after %d blobs written: %d read, %d removals", written2-written, reads2-reads, removes2-removes)
	if full2 != 0 || full != 0 {
		t.Fatalf("%d sweeps looked at every blob, want none yet", full2)
	}
	if removes2 != removes+1 {
		t.Fatalf("%d removals, want 1", removes2-removes)
	}
	if r := reads2 - reads; r > written2-written || r > 600 {
		t.Fatalf("the sweep read %d blobs, want at most the %d written since the last", r, written2-written)
	}
	checkUsedStored(t, m, st, u.Handle)
	u.Release()

	// Another process continues the session.
	m2 := workspaceSessions(t, st, 20)
	u2, err := m2.Use(ctx, Request{Handle: u.Handle})
	if err != nil {
		t.Fatal(err)
	}
	defer u2.Release()
	_, reads, _, _ = st.counts()
	sweepOnce(t, m2, u2, "c")
	_, reads2, full, _ = st.counts()
	t.Logf("the first sweep of the continued session: %d read", reads2-reads)
	if full != 0 || reads2-reads < 600 {
		t.Fatalf("the first sweep of the continued session read %d blobs, and %d sweeps looked at every blob: want it to read what the head uses, and none", reads2-reads, full)
	}
	checkUsedStored(t, m2, st, u.Handle)
	written, reads, _, _ = st.counts()
	sweepOnce(t, m2, u2, "d")
	written2, reads2, full2, _ = st.counts()
	if r := reads2 - reads; full2 != 0 || r > written2-written || r > 600 {
		t.Fatalf("the second sweep of the continued session: %d read after %d written, %d sweeps of every blob", r, written2-written, full2)
	}
	checkUsedStored(t, m2, st, u.Handle)
}

// TestSweepWholeRemovesWhatNoProcessWill: the blobs of a commit that
// lost to another (its process gone before it could sweep them) are
// removed by the sweep that looks at every blob, once the session's
// commits have written enough since; the sweeps before leave them.
func TestSweepWholeRemovesWhatNoProcessWill(t *testing.T) {
	st := &counted{Store: store.NewMemory(store.Options{}), removed: map[string]bool{}}
	m, file := reclaimSessions(st, time.Minute)
	defer m.Close()
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	lost := []byte("the blob of a commit that lost")
	sh, err := st.Load(ctx, u.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Store.Commit(ctx, u.Handle, sh.Rev-1, sh.Data, map[string][]byte{store.Hash(lost): lost}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a commit at an old revision: %v, want a conflict", err)
	}
	for i := 0; ; i++ {
		// The blob first, then the count: a sweep runs in the
		// background, and one of every blob counts itself before it
		// looks, so a blob gone with no such sweep counted yet is one
		// that another sweep removed.
		_, err := st.Blob(ctx, u.Handle, store.Hash(lost))
		if _, _, full, _ := st.counts(); full > 0 {
			break
		}
		if i == 4*fullAfter {
			t.Fatalf("%d commits of a blob each, and no sweep looked at every blob", i)
		}
		if err != nil {
			t.Fatalf("commit %d: the lost commit's blob: %v, before a sweep of every blob", i, err)
		}
		session.Set(u.Session, file, fmt.Sprint(i, strings.Repeat("x", statetree.InlineMax)))
		if err := u.Commit(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := st.Blob(ctx, u.Handle, store.Hash(lost))
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lost commit's blob after a sweep of every blob: %v", err)
		}
	}
}
