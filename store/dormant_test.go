package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// dormancy is the Options.Dormancy of these tests: short, so that a holder
// left alone goes dormant soon.
const dormancy = 20 * time.Millisecond

// waitDormant waits until s's host is dormant, or fails the test when ctx
// ends first.
func waitDormant(t *testing.T, ctx context.Context, s *JetStream) {
	t.Helper()
	for !s.host.dormant.Load() || s.host.srv.Load() != nil {
		select {
		case <-ctx.Done():
			t.Fatal("the holder did not go dormant")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestEmbeddedDormantAlone checks that a holder left alone goes dormant,
// that its state dir's lock is free then, and that its next call wakes it
// with everything as it was, holding the dir again and still not shared.
func TestEmbeddedDormantAlone(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer a.Close()
	rev := must[uint64](t)(a.Create(ctx, "s", []byte("before")))
	waitDormant(t, ctx, a)

	f := must[*os.File](t)(os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0))
	if ok := must[bool](t)(tryLock(f)); !ok {
		t.Fatal("a dormant holder keeps the state dir's lock")
	}
	unlock(f)
	f.Close()

	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "before" || h.Rev != rev {
		t.Fatalf("after waking: head %q at %d, want before at %d", h.Data, h.Rev, rev)
	}
	if a.host.srv.Load() == nil {
		t.Fatal("the woken holder does not hold the dir again")
	}
	if a.Shared() {
		t.Fatal("a holder that no other process met says it is shared")
	}
	must[uint64](t)(a.Commit(ctx, "s", rev, []byte("after"), nil))

	// And it goes dormant again, and wakes again.
	waitDormant(t, ctx, a)
	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "after" {
		t.Fatalf("after waking again: head %q", h.Data)
	}
}

// TestEmbeddedDormantArrival checks that a process that opens the state
// dir while its holder is dormant takes the dir, that the dormant holder
// wakes then, before any call, and reaches it, says it is shared, and
// both read each other's commits.
func TestEmbeddedDormantArrival(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer a.Close()
	rev := must[uint64](t)(a.Create(ctx, "s", []byte("from a")))
	waitDormant(t, ctx, a)

	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	defer b.Close()
	srv := b.host.srv.Load()
	if srv == nil {
		t.Fatal("the process that arrived does not hold the dir")
	}
	for srv.NumClients() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the dormant holder did not wake and reach the process that arrived")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if h := must[Head](t)(b.Load(ctx, "s")); string(h.Data) != "from a" || h.Rev != rev {
		t.Fatalf("b reads %q at %d", h.Data, h.Rev)
	}
	rev = must[uint64](t)(b.Commit(ctx, "s", rev, []byte("from b"), nil))

	if !a.Shared() {
		t.Fatal("the woken holder does not say it is shared")
	}
	if a.host.srv.Load() != nil {
		t.Fatal("the woken holder started a server of its own")
	}
	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "from b" || h.Rev != rev {
		t.Fatalf("a reads %q at %d after waking", h.Data, h.Rev)
	}
	rev = must[uint64](t)(a.Commit(ctx, "s", rev, []byte("from a again"), nil))
	if h := must[Head](t)(b.Load(ctx, "s")); string(h.Data) != "from a again" || h.Rev != rev {
		t.Fatalf("b reads %q at %d", h.Data, h.Rev)
	}
	// b, with a connected, does not go dormant (it has no dormancy
	// anyway).
	if b.host.dormant.Load() {
		t.Fatal("a store went dormant while another process was connected")
	}
}

// TestEmbeddedDormantSibling checks that a sibling (a process that
// reaches the holder over loopback) left idle goes dormant too: it
// closes its connection, so that the holder, alone then, goes dormant in
// turn; that a call through the sibling while nobody holds the dir makes
// it the holder, and wakes the former holder, which reaches it; and that
// each reads what the other committed.
func TestEmbeddedDormantSibling(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer a.Close()
	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer b.Close()
	if b.host.srv.Load() != nil {
		t.Fatal("the second process holds the dir")
	}
	rev := must[uint64](t)(b.Create(ctx, "s", []byte("from b")))
	bChanges := must[<-chan Change](t)(b.Watch(ctx))
	waitDormant(t, ctx, b)
	waitDormant(t, ctx, a)
	if b.nc.IsConnected() {
		t.Fatal("the dormant sibling keeps its connection")
	}

	// a wakes, takes the dir again and commits; b, dormant, learns of
	// it at its next call, and its watch reports it then.
	rev = must[uint64](t)(a.Commit(ctx, "s", rev, []byte("from a"), nil))
	if a.host.srv.Load() == nil {
		t.Fatal("the woken holder does not hold the dir")
	}
	if !b.Shared() {
		t.Fatal("the woken sibling does not say it is shared")
	}
	if h := must[Head](t)(b.Load(ctx, "s")); string(h.Data) != "from a" || h.Rev != rev {
		t.Fatalf("b reads %q at %d after waking", h.Data, h.Rev)
	}
	select {
	case c := <-bChanges:
		if c.Session != "s" || c.Rev != rev {
			t.Fatalf("the watch reports %+v, want s at %d", c, rev)
		}
	case <-ctx.Done():
		t.Fatal("the sibling's watch did not report the commit made while it was dormant")
	}

	// Both dormant again; a call through b, with nobody holding the dir,
	// makes b the holder, and a, which watches the lock file, reaches it.
	waitDormant(t, ctx, b)
	waitDormant(t, ctx, a)
	rev = must[uint64](t)(b.Commit(ctx, "s", rev, []byte("from b again"), nil))
	if b.host.srv.Load() == nil {
		t.Fatal("the sibling woken while nobody held the dir did not take it")
	}
	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "from b again" || h.Rev != rev {
		t.Fatalf("a reads %q at %d", h.Data, h.Rev)
	}
	if a.host.srv.Load() != nil {
		t.Fatal("the former holder started a server of its own")
	}
}

// TestEmbeddedDormantForeign checks that a holder that wakes to find that
// another process held its state dir meanwhile, and left, says it is
// shared (its sessions held in memory may be stale), and reads what the
// other committed; and that its watch, which the dormancy paused, reports
// that commit. The holder does not watch the lock file here, as where it
// cannot, or as when the other came and went before it woke.
func TestEmbeddedDormantForeign(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer a.Close()
	rev := must[uint64](t)(a.Create(ctx, "s", []byte("from a")))
	changes := must[<-chan Change](t)(a.Watch(ctx))
	waitDormant(t, ctx, a)
	a.host.mu.Lock()
	if a.host.arrival == nil {
		t.Fatal("the dormant holder does not watch its lock file")
	}
	a.host.arrival.Close()
	a.host.arrival = nil
	a.host.mu.Unlock()

	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	rev = must[uint64](t)(b.Commit(ctx, "s", rev, []byte("from b"), nil))
	b.Close()

	if !a.Shared() {
		t.Fatal("a holder that another process replaced while it was dormant does not say it is shared")
	}
	if a.host.srv.Load() == nil {
		t.Fatal("the woken holder does not hold the dir again")
	}
	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "from b" || h.Rev != rev {
		t.Fatalf("a reads %q at %d after waking", h.Data, h.Rev)
	}
	select {
	case c := <-changes:
		if c.Session != "s" || c.Rev != rev {
			t.Fatalf("the watch reports %+v, want s at %d", c, rev)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not report the commit made while the holder was dormant")
	}
}

// TestEmbeddedAwakeWithSibling checks that a holder does not go dormant
// while another process is connected to its server, and does once it has
// gone.
func TestEmbeddedAwakeWithSibling(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: time.Hour}))
	defer a.Close()
	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	must[uint64](t)(b.Create(ctx, "s", nil))
	a.host.last.Store(0) // idle for long enough
	a.host.sleep()
	if a.host.dormant.Load() {
		t.Fatal("the holder went dormant with another process connected")
	}
	b.Close()
	for a.host.srv.Load().NumClients() > 1 {
		select {
		case <-ctx.Done():
			t.Fatal("the other process's connection is still counted")
		case <-time.After(5 * time.Millisecond):
		}
	}
	a.host.sleep()
	if !a.host.dormant.Load() {
		t.Fatal("the holder did not go dormant once alone")
	}
	must[Head](t)(a.Load(ctx, "s"))
}

// TestEmbeddedDormantClose checks that a dormant store closes at once,
// and that a call after its close fails rather than wakes it.
func TestEmbeddedDormantClose(t *testing.T) {
	ctx := ctxT(t)
	a := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{Dormancy: dormancy}))
	must[uint64](t)(a.Create(ctx, "s", nil))
	waitDormant(t, ctx, a)
	a.Close()
	_, err := a.Load(ctx, "s")
	wantErr(t, err, ErrUnavailable)
	if a.Shared() {
		t.Fatal("a closed store alone says it is shared")
	}
}

// TestEmbeddedDormantBackground checks that a call in the background
// wakes a dormant holder, which goes dormant again soon after, while a
// call not in the background keeps it awake for its dormancy.
func TestEmbeddedDormantBackground(t *testing.T) {
	ctx := ctxT(t)
	a := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{Dormancy: time.Hour}))
	defer a.Close()
	must[uint64](t)(a.Create(ctx, "s", []byte("h")))
	a.host.last.Store(0) // idle for long enough
	a.host.sleep()
	if !a.host.dormant.Load() {
		t.Fatal("the holder did not go dormant")
	}
	if _, err := a.Expire(Background(ctx), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if a.host.srv.Load() == nil {
		t.Fatal("a call in the background did not wake the holder")
	}
	waitDormant(t, ctx, a)

	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "h" {
		t.Fatalf("after waking: head %q", h.Data)
	}
	a.host.sleep()
	if a.host.dormant.Load() {
		t.Fatal("the holder went dormant right after a call")
	}
}

// TestEmbeddedDormantComeAndGo checks that a holder alone, dormant while
// another process comes, commits and goes, says it is shared when asked
// right after, whether the other's arrival has woken it yet, is waking it,
// or not: until it has taken the dir again, or reached the other, it
// cannot tell, and waits.
func TestEmbeddedDormantComeAndGo(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Dormancy: dormancy}))
	defer a.Close()
	rev := must[uint64](t)(a.Create(ctx, "s", []byte("from a")))
	waitDormant(t, ctx, a)
	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	rev = must[uint64](t)(b.Commit(ctx, "s", rev, []byte("from b"), nil))
	b.Close()
	if !a.Shared() {
		t.Fatal("a holder that another process replaced while it was dormant does not say it is shared")
	}
	if h := must[Head](t)(a.Load(ctx, "s")); string(h.Data) != "from b" || h.Rev != rev {
		t.Fatalf("a reads %q at %d after waking", h.Data, h.Rev)
	}
}
