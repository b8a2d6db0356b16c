package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// contractRetention is the call log retention of the stores under contract.
const contractRetention = 5

// contract runs the Store contract against stores made by open, each new,
// empty, and closed when the test ends.
func contract(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s Store)
	}{
		{"CreateLoadCommit", testCreateLoadCommit},
		{"ManyBlobs", testManyBlobs},
		{"Conflict", testConflict},
		{"ConcurrentCommitters", testConcurrentCommitters},
		{"BlobBeforeHead", testBlobBeforeHead},
		{"HeadNeverDangles", testHeadNeverDangles},
		{"Delete", testDelete},
		{"Heads", testHeads},
		{"Sweep", testSweep},
		{"Remove", testRemove},
		{"Expire", testExpire},
		{"LogRetention", testLogRetention},
		{"Watch", testWatch},
		{"Invalid", testInvalid},
		{"Closed", testClosed},
		{"Tasks", testTasks},
		{"TaskExpires", testTaskExpires},
		{"PutData", testPutData},
		{"PutDataInvalid", testPutDataInvalid},
		{"RemoveData", testRemoveData},
		{"SweepData", testSweepData},
		{"DeleteData", testDeleteData},
		{"ExpireData", testExpireData},
		{"OnePerSubject", testOnePerSubject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open(t)) })
	}
}

func TestMemory(t *testing.T) {
	contract(t, func(t *testing.T) Store {
		s := NewMemory(Options{LogRetention: contractRetention})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestEmbedded(t *testing.T) {
	contract(t, func(t *testing.T) Store {
		s, err := OpenEmbedded(ctxT(t), t.TempDir(), Options{LogRetention: contractRetention})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestCluster(t *testing.T) {
	c := sharedCluster(t)
	contract(t, func(t *testing.T) Store {
		s, err := Connect(ctxT(t), c.URLs(), Options{
			LogRetention: contractRetention,
			Replicas:     3,
			Name:         storeName("contract"),
			Timeout:      20 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// ctxT returns a context that ends with the test, bounded to a minute.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// blob returns content and the blob map that stores it.
func blob(content string) ([]byte, map[string][]byte) {
	b := []byte(content)
	return b, map[string][]byte{Hash(b): b}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testCreateLoadCommit(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev0 := must[uint64](t)(s.Create(ctx, "s1", []byte("h0")))
	_, err := s.Create(ctx, "s1", []byte("again"))
	wantErr(t, err, ErrExists)

	h := must[Head](t)(s.Load(ctx, "s1"))
	if string(h.Data) != "h0" || h.Rev != rev0 || time.Since(h.Time) > time.Minute {
		t.Fatalf("Load = %q rev %d at %v, want h0 rev %d now", h.Data, h.Rev, h.Time, rev0)
	}

	content, blobs := blob("file content")
	rev1 := must[uint64](t)(s.Commit(ctx, "s1", rev0, []byte("h1"), blobs))
	if rev1 <= rev0 {
		t.Fatalf("revision went from %d to %d", rev0, rev1)
	}
	h = must[Head](t)(s.Load(ctx, "s1"))
	if string(h.Data) != "h1" || h.Rev != rev1 {
		t.Fatalf("Load = %q rev %d, want h1 rev %d", h.Data, h.Rev, rev1)
	}
	if got := must[[]byte](t)(s.Blob(ctx, "s1", Hash(content))); !bytes.Equal(got, content) {
		t.Fatalf("Blob = %q, want %q", got, content)
	}

	// A commit with no blobs, as a read-only call that refreshes the
	// session's time makes.
	rev2 := must[uint64](t)(s.Commit(ctx, "s1", rev1, h.Data, nil))
	if rev2 <= rev1 {
		t.Fatalf("revision went from %d to %d", rev1, rev2)
	}

	_, err = s.Load(ctx, "absent")
	wantErr(t, err, ErrNotFound)
	_, err = s.Commit(ctx, "absent", rev0, []byte("h"), nil)
	wantErr(t, err, ErrNotFound)
	_, err = s.Blob(ctx, "s1", Hash([]byte("never stored")))
	wantErr(t, err, ErrNotFound)
	_, err = s.Blob(ctx, "absent", Hash(content))
	wantErr(t, err, ErrNotFound)
}

// testManyBlobs commits more blobs at once than the JetStream store keeps
// in flight.
func testManyBlobs(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	blobs := map[string][]byte{}
	for i := range 300 {
		b := []byte(fmt.Sprint("blob ", i))
		blobs[Hash(b)] = b
	}
	must[uint64](t)(s.Commit(ctx, "s", rev, nil, blobs))
	for h, b := range blobs {
		if got := must[[]byte](t)(s.Blob(ctx, "s", h)); !bytes.Equal(got, b) {
			t.Fatalf("blob %s = %q, want %q", h, got, b)
		}
	}
}

func testConflict(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", []byte("h0")))
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("first"), nil))
	_, err := s.Commit(ctx, "s", rev, []byte("second"), nil)
	wantErr(t, err, ErrConflict)
	if h := must[Head](t)(s.Load(ctx, "s")); string(h.Data) != "first" {
		t.Fatalf("head %q, want the first commit's", h.Data)
	}

	// Two writers on one revision, at the same time: exactly one wins.
	for round := range 5 {
		h := must[Head](t)(s.Load(ctx, "s"))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				_, blobs := blob(fmt.Sprintf("round %d writer %d", round, w))
				_, err := s.Commit(ctx, "s", h.Rev, []byte(fmt.Sprint(w)), blobs)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, ErrConflict):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d writers won, want 1", round, wins.Load())
		}
	}
}

func testConcurrentCommitters(t *testing.T, s Store) {
	ctx := ctxT(t)
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := increment(ctx, s, "counter"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c := loadCounter(t, s, "counter")
	if c.N != writers*each {
		t.Fatalf("counter %d after %d increments: updates were lost", c.N, writers*each)
	}
}

// loadCounter loads a counter session and checks that its blob is stored.
func loadCounter(t *testing.T, s Store, session string) counterHead {
	t.Helper()
	ctx := ctxT(t)
	var c counterHead
	if err := json.Unmarshal(must[Head](t)(s.Load(ctx, session)).Data, &c); err != nil {
		t.Fatal(err)
	}
	if got := string(must[[]byte](t)(s.Blob(ctx, session, c.Blob))); got != fmt.Sprint(c.N) {
		t.Fatalf("blob of counter %d holds %q", c.N, got)
	}
	return c
}

// testBlobBeforeHead makes the state a crash between a commit's blobs and
// its head leaves (blobs written, head refused because it moved), and
// checks the head is whole and the garbage reclaimable.
func testBlobBeforeHead(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev0 := must[uint64](t)(s.Create(ctx, "s", nil))
	kept, blobs := blob("kept")
	rev1 := must[uint64](t)(s.Commit(ctx, "s", rev0, []byte(Hash(kept)), blobs))

	orphan, blobs := blob("orphan")
	_, err := s.Commit(ctx, "s", rev0, []byte(Hash(orphan)), blobs)
	wantErr(t, err, ErrConflict)

	h := must[Head](t)(s.Load(ctx, "s"))
	if h.Rev != rev1 || string(h.Data) != Hash(kept) {
		t.Fatalf("head %q at %d, want the first commit's at %d", h.Data, h.Rev, rev1)
	}
	must[[]byte](t)(s.Blob(ctx, "s", Hash(kept)))
	must[[]byte](t)(s.Blob(ctx, "s", Hash(orphan))) // garbage, until swept

	// The orphan was written after rev1: a sweep at rev1 keeps it, as it
	// may belong to a commit in flight. A sweep at a later head removes it.
	if n := must[Swept](t)(s.Sweep(ctx, "s", rev1, func(h string) bool { return h == Hash(kept) })).Removed; n != 0 {
		t.Fatalf("sweep at %d removed %d blobs written after it", rev1, n)
	}
	rev2 := must[uint64](t)(s.Commit(ctx, "s", rev1, h.Data, nil))
	if n := must[Swept](t)(s.Sweep(ctx, "s", rev2, func(h string) bool { return h == Hash(kept) })).Removed; n != 1 {
		t.Fatalf("sweep removed %d blobs, want the orphan", n)
	}
	_, err = s.Blob(ctx, "s", Hash(orphan))
	wantErr(t, err, ErrNotFound)
	must[[]byte](t)(s.Blob(ctx, "s", Hash(kept)))
}

// testHeadNeverDangles runs committers that switch the head between blobs
// (sometimes back to one a sweep may have removed), a sweeper that sweeps
// at every head it sees, and a reader that checks every head it loads can
// be followed to its blob.
func testHeadNeverDangles(t *testing.T, s Store) {
	ctx := ctxT(t)
	must[uint64](t)(s.Create(ctx, "s", nil))
	const commits = 40
	var wg sync.WaitGroup
	var done atomic.Bool
	for w := range 2 {
		wg.Go(func() {
			for i := range commits {
				content, blobs := blob(fmt.Sprint(i % 4)) // few contents: they come back
				for {
					h, err := s.Load(ctx, "s")
					if err != nil {
						t.Error(err)
						return
					}
					if _, err = s.Commit(ctx, "s", h.Rev, []byte(Hash(content)), blobs); err == nil {
						break
					}
					if !errors.Is(err, ErrConflict) {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			}
		})
	}
	follow := func(sweep bool) {
		for !done.Load() {
			h, err := s.Load(ctx, "s")
			if err != nil {
				t.Error(err)
				return
			}
			if len(h.Data) == 0 {
				continue
			}
			if sweep {
				if _, err := s.Sweep(ctx, "s", h.Rev, func(x string) bool { return x == string(h.Data) }); err != nil {
					t.Error(err)
					return
				}
				continue
			}
			if _, err := s.Blob(ctx, "s", string(h.Data)); err != nil {
				// The head may have moved on and its blob been swept since
				// it was loaded; only a current head must be whole.
				if now, lerr := s.Load(ctx, "s"); lerr == nil && now.Rev == h.Rev {
					t.Errorf("head at %d refers to a missing blob: %v", h.Rev, err)
					return
				}
			}
		}
	}
	var bg sync.WaitGroup
	bg.Go(func() { follow(true) })
	bg.Go(func() { follow(false) })
	wg.Wait()
	done.Store(true)
	bg.Wait()
	h := must[Head](t)(s.Load(ctx, "s"))
	must[[]byte](t)(s.Blob(ctx, "s", string(h.Data)))
}

func testDelete(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	content, blobs := blob("content")
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobs))
	if err := s.AppendLog(ctx, "s", []byte("call")); err != nil {
		t.Fatal(err)
	}
	must[uint64](t)(s.Create(ctx, "other", nil))

	if err := s.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load(ctx, "s")
	wantErr(t, err, ErrNotFound)
	_, err = s.Blob(ctx, "s", Hash(content))
	wantErr(t, err, ErrNotFound)
	if l := must[[][]byte](t)(s.ReadLog(ctx, "s", 10)); len(l) != 0 {
		t.Fatalf("log of a deleted session: %q", l)
	}
	wantErr(t, s.Delete(ctx, "s"), ErrNotFound)
	// A commit that loaded the session before it was deleted fails, and
	// leaves none of its blobs.
	late, lateBlobs := blob("late")
	_, err = s.Commit(ctx, "s", rev, []byte("late"), lateBlobs)
	wantErr(t, err, ErrNotFound)
	must[Head](t)(s.Load(ctx, "other"))

	// The name can be used again, and starts empty.
	rev = must[uint64](t)(s.Create(ctx, "s", []byte("new")))
	for _, b := range [][]byte{content, late} {
		_, err = s.Blob(ctx, "s", Hash(b))
		wantErr(t, err, ErrNotFound)
	}
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobs))
	must[[]byte](t)(s.Blob(ctx, "s", Hash(content)))
}

func testSweep(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	a, blobsA := blob("a")
	b, _ := blob("b")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("a b"), map[string][]byte{Hash(a): a, Hash(b): b}))
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("b"), nil))
	atB := rev
	liveAtB := func(h string) bool { return h == Hash(b) }

	// A commit after the sweep's revision brings a back: written again, it
	// survives a sweep at the older revision that does not count it.
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("a b"), blobsA))
	if n := must[Swept](t)(s.Sweep(ctx, "s", atB, liveAtB)).Removed; n != 0 {
		t.Fatalf("sweep removed %d blobs, want none", n)
	}
	must[[]byte](t)(s.Blob(ctx, "s", Hash(a)))

	// Dropped again, and swept at the current head: a goes, b stays.
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("b"), nil))
	if n := must[Swept](t)(s.Sweep(ctx, "s", rev, liveAtB)).Removed; n != 1 {
		t.Fatalf("sweep removed %d blobs, want 1", n)
	}
	_, err := s.Blob(ctx, "s", Hash(a))
	wantErr(t, err, ErrNotFound)
	must[[]byte](t)(s.Blob(ctx, "s", Hash(b)))
}

// testRemove checks that Remove takes the blobs it names written before
// its revision, and leaves the others and those written again since.
func testRemove(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	a, blobsA := blob("a")
	b, _ := blob("b")
	c, _ := blob("c")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("a b c"), map[string][]byte{Hash(a): a, Hash(b): b, Hash(c): c}))
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("c"), nil))
	atC := rev
	// a is written again after the revision that names it dead.
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("a c"), blobsA))
	if n := must[int](t)(s.Remove(ctx, "s", atC, []string{Hash(a), Hash(b), Hash([]byte("never"))})); n != 3 {
		t.Fatalf("Remove looked for %d blobs, want 3", n)
	}
	_, err := s.Blob(ctx, "s", Hash(b))
	wantErr(t, err, ErrNotFound)
	must[[]byte](t)(s.Blob(ctx, "s", Hash(a)))
	must[[]byte](t)(s.Blob(ctx, "s", Hash(c)))
	_, err = s.Remove(ctx, "s", atC, []string{"not a hash"})
	wantErr(t, err, ErrInvalid)
}

func testExpire(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "old", nil))
	content, blobs := blob("content")
	must[uint64](t)(s.Commit(ctx, "old", rev, []byte("h"), blobs))
	if err := s.AppendLog(ctx, "old", []byte("call")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	must[uint64](t)(s.Create(ctx, "new", nil))
	cutoff := must[Head](t)(s.Load(ctx, "new")).Time

	if n := must[int](t)(s.Expire(ctx, cutoff)); n != 1 {
		t.Fatalf("Expire deleted %d sessions, want 1", n)
	}
	_, err := s.Load(ctx, "old")
	wantErr(t, err, ErrNotFound)
	_, err = s.Blob(ctx, "old", Hash(content))
	wantErr(t, err, ErrNotFound)
	if l := must[[][]byte](t)(s.ReadLog(ctx, "old", 10)); len(l) != 0 {
		t.Fatalf("log of an expired session: %q", l)
	}
	must[Head](t)(s.Load(ctx, "new"))
	if n := must[int](t)(s.Expire(ctx, cutoff)); n != 0 {
		t.Fatalf("second Expire deleted %d sessions", n)
	}
}

func testLogRetention(t *testing.T, s Store) {
	ctx := ctxT(t)
	for i := range 8 {
		if err := s.AppendLog(ctx, "s", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{100, "3 4 5 6 7"},
		{contractRetention, "3 4 5 6 7"},
		{2, "6 7"},
		{0, ""},
	} {
		l := must[[][]byte](t)(s.ReadLog(ctx, "s", tt.n))
		if got := string(bytes.Join(l, []byte(" "))); got != tt.want {
			t.Errorf("ReadLog(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if l := must[[][]byte](t)(s.ReadLog(ctx, "none", 10)); len(l) != 0 {
		t.Fatalf("log of a session never logged: %q", l)
	}

	// Entries appended together are read back in order, as many as the
	// retention allows.
	for _, batch := range [][]string{{"a", "b", "c"}, {"d"}, {"e", "f", "g"}} {
		entries := make([][]byte, len(batch))
		for i, e := range batch {
			entries[i] = []byte(e)
		}
		if err := s.AppendLog(ctx, "batches", entries...); err != nil {
			t.Fatal(err)
		}
	}
	l := must[[][]byte](t)(s.ReadLog(ctx, "batches", 100))
	if got := string(bytes.Join(l, []byte(" "))); got != "c d e f g" {
		t.Errorf("ReadLog of appends of 3, 1 and 3 entries = %q, want %q", got, "c d e f g")
	}
}

// testWatch checks that a watch reports each change of a head, up to the
// session's deletion. Each step waits for its report before the next
// change: a revision replaced before it is delivered may be skipped.
func testWatch(t *testing.T, s Store) {
	ctx := ctxT(t)
	wctx, stop := context.WithCancel(ctx)
	w := must[<-chan Change](t)(s.Watch(wctx))
	next := func(want Change) {
		t.Helper()
		select {
		case got := <-w:
			if got != want {
				t.Fatalf("change %+v, want %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change, want %+v", want)
		}
	}
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	next(Change{"s", rev})
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), nil))
	next(Change{"s", rev})
	if err := s.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	next(Change{"s", 0})
	stop()
	for range w {
	}
}

func testInvalid(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	content := []byte("content")
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"bad session", func() error { _, err := s.Create(ctx, "a.b", nil); return err }()},
		{"empty session", func() error { _, err := s.Load(ctx, ""); return err }()},
		{"long session", func() error { _, err := s.Load(ctx, strings.Repeat("x", 129)); return err }()},
		{"wildcard session", func() error { return s.AppendLog(ctx, "*", nil) }()},
		{"bad hash", func() error { _, err := s.Blob(ctx, "s", "abc"); return err }()},
		{"upper-case hash", func() error { _, err := s.Blob(ctx, "s", strings.ToUpper(Hash(content))); return err }()},
		{"key not the content's hash", func() error {
			_, err := s.Commit(ctx, "s", rev, nil, map[string][]byte{Hash(content): []byte("other")})
			return err
		}()},
		{"head too large", func() error {
			_, err := s.Commit(ctx, "s", rev, make([]byte, MaxValue+1), nil)
			return err
		}()},
		{"log entry too large", func() error { return s.AppendLog(ctx, "s", make([]byte, MaxValue+1)) }()},
	} {
		if !errors.Is(tt.err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", tt.name, tt.err)
		}
	}
	// The largest value passes.
	big := make([]byte, MaxValue)
	must[uint64](t)(s.Commit(ctx, "s", rev, big, map[string][]byte{Hash(big): big}))
}

// testClosed checks that a closed store answers every call at once with
// ErrUnavailable, and closes its watches.
func testClosed(t *testing.T, s Store) {
	ctx := ctxT(t)
	w := must[<-chan Change](t)(s.Watch(ctx))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range w {
	}
	start := time.Now()
	calls := map[string]error{}
	_, calls["Create"] = s.Create(ctx, "s", nil)
	_, calls["Load"] = s.Load(ctx, "s")
	_, calls["Commit"] = s.Commit(ctx, "s", 1, nil, nil)
	_, calls["Blob"] = s.Blob(ctx, "s", Hash(nil))
	_, calls["Sweep"] = s.Sweep(ctx, "s", 1, func(string) bool { return true })
	_, calls["Remove"] = s.Remove(ctx, "s", 1, []string{Hash(nil)})
	calls["Delete"] = s.Delete(ctx, "s")
	_, calls["Expire"] = s.Expire(ctx, time.Now())
	_, calls["Watch"] = s.Watch(ctx)
	calls["AppendLog"] = s.AppendLog(ctx, "s", nil)
	_, calls["ReadLog"] = s.ReadLog(ctx, "s", 1)
	for name, err := range calls {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want ErrUnavailable", name, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("calls on a closed store took %v", d)
	}
}

// testTasks checks that task records are written by compare-and-swap, read
// back by owner and id, and listed by owner in the order last written.
func testTasks(t *testing.T, s Store) {
	ctx := ctxT(t)
	if _, _, err := s.Task(ctx, "alice", "t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Task of none: got %v, want ErrNotFound", err)
	}
	r1 := must[uint64](t)(s.PutTask(ctx, "alice", "t1", 0, []byte("working"), time.Minute))
	_, err := s.PutTask(ctx, "alice", "t1", 0, []byte("again"), time.Minute)
	wantErr(t, err, ErrConflict)
	r2 := must[uint64](t)(s.PutTask(ctx, "alice", "t2", 0, []byte("other"), time.Minute))
	r3 := must[uint64](t)(s.PutTask(ctx, "alice", "t1", r1, []byte("completed"), time.Minute))
	_, err = s.PutTask(ctx, "alice", "t1", r1, []byte("cancelled"), time.Minute)
	wantErr(t, err, ErrConflict)
	if r2 <= r1 || r3 <= r2 {
		t.Errorf("revisions %d, %d, %d: want increasing", r1, r2, r3)
	}
	rec, rev, err := s.Task(ctx, "alice", "t1")
	if err != nil || string(rec) != "completed" || rev != r3 {
		t.Fatalf("Task = %q, %d, %v; want completed, %d", rec, rev, err, r3)
	}
	if _, _, err := s.Task(ctx, "bob", "t1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another owner's task: got %v, want ErrNotFound", err)
	}
	list := must[[][]byte](t)(s.Tasks(ctx, "alice"))
	if got := fmt.Sprintf("%s", list); got != "[other completed]" {
		t.Errorf("Tasks = %s, want [other completed]", got)
	}
	if list := must[[][]byte](t)(s.Tasks(ctx, "bob")); len(list) != 0 {
		t.Errorf("Tasks of an owner without any = %s", list)
	}
	_, err = s.PutTask(ctx, "a.b", "t1", 0, nil, time.Minute)
	wantErr(t, err, ErrInvalid)
}

// testTaskExpires checks that a task's record is deleted once kept as long
// as its last write asked.
func testTaskExpires(t *testing.T, s Store) {
	ctx := ctxT(t)
	must[uint64](t)(s.PutTask(ctx, "alice", "short", 0, []byte("x"), time.Second))
	must[uint64](t)(s.PutTask(ctx, "alice", "long", 0, []byte("y"), time.Hour))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := s.Task(ctx, "alice", "short")
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("a record kept for a second: still there after 10s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if list := must[[][]byte](t)(s.Tasks(ctx, "alice")); len(list) != 1 || string(list[0]) != "y" {
		t.Errorf("Tasks after one expired = %s, want [y]", list)
	}
}

// testHeads: Heads lists every session's latest head, with its revision
// and time, and no deleted session.
func testHeads(t *testing.T, s Store) {
	ctx := ctxT(t)
	if got := must[[]SessionHead](t)(s.Heads(ctx)); len(got) != 0 {
		t.Fatalf("an empty store's heads: %v", got)
	}
	start := time.Now().Add(-time.Second)
	want := map[string]uint64{}
	for _, name := range []string{"a", "b", "c"} {
		rev := must[uint64](t)(s.Create(ctx, name, []byte("first "+name)))
		want[name] = must[uint64](t)(s.Commit(ctx, name, rev, []byte("head "+name), nil))
	}
	must[uint64](t)(s.Create(ctx, "gone", []byte("x")))
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	got := must[[]SessionHead](t)(s.Heads(ctx))
	if len(got) != len(want) {
		t.Fatalf("heads %v, want a, b and c", got)
	}
	for _, h := range got {
		if h.Rev != want[h.Session] || string(h.Data) != "head "+h.Session || h.Time.Before(start) {
			t.Errorf("head %s: %q at %d (%v), want %q at %d", h.Session, h.Data, h.Rev, h.Time, "head "+h.Session, want[h.Session])
		}
	}
}
