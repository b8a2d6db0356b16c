package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wink-mcp/wink-mcp/blobname"
)

// putData stores contents as located blobs of session and returns their
// names.
func putData(t *testing.T, s Store, session string, contents ...string) []string {
	t.Helper()
	bs := make([][]byte, len(contents))
	for i, c := range contents {
		bs[i] = []byte(c)
	}
	names := must[[]string](t)(s.PutData(ctxT(t), session, bs))
	if len(names) != len(contents) {
		t.Fatalf("PutData returned %d names for %d contents", len(names), len(contents))
	}
	return names
}

// wantBlobs checks that each of names is found with its content, or not
// found, as found says.
func wantBlobs(t *testing.T, s Store, session string, found bool, names ...string) {
	t.Helper()
	for _, n := range names {
		b, err := s.Blob(ctxT(t), session, n)
		switch {
		case found && err != nil:
			t.Errorf("Blob %s: %v", n, err)
		case found:
			if h, _, _ := blobname.Split(n); Hash(b) != h {
				t.Errorf("Blob %s = %q, not its content", n, b)
			}
		default:
			wantErr(t, err, ErrNotFound)
		}
	}
}

// testPutData: PutData stores each content as a located blob named by its
// hash and its revision, in order, with revisions drawn from the sequence
// of heads and blobs; Blob finds it by that name and nothing else.
func testPutData(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", []byte("h")))
	var contents []string
	for i := range 300 { // more than the JetStream store keeps in flight
		contents = append(contents, fmt.Sprint("file ", i%150)) // each twice
	}
	names := putData(t, s, "s", contents...)
	last := rev
	for i, n := range names {
		h, seq, ok := blobname.Split(n)
		if !ok || seq <= last || h != Hash([]byte(contents[i])) {
			t.Fatalf("name %d %q after revision %d, want the hash of %q at a later revision", i, n, last, contents[i])
		}
		last = seq
		if got := must[[]byte](t)(s.Blob(ctx, "s", n)); string(got) != contents[i] {
			t.Fatalf("Blob %s = %q, want %q", n, got, contents[i])
		}
	}
	if next := must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h2"), nil)); next <= last {
		t.Errorf("a commit after PutData got revision %d, not after %d", next, last)
	}
	if got := must[[]string](t)(s.PutData(ctx, "s", nil)); len(got) != 0 {
		t.Errorf("PutData of nothing: %q", got)
	}

	// Names that hold no blob of the session with that hash.
	other := putData(t, s, "other", "file 0")
	content, blobs := blob("addressed")
	blobRev := must[uint64](t)(s.Commit(ctx, "s", must[Head](t)(s.Load(ctx, "s")).Rev, []byte("h3"), blobs))
	headRev := must[Head](t)(s.Load(ctx, "s")).Rev
	h0, seq0, _ := blobname.Split(names[0])
	hOther, seqOther, _ := blobname.Split(other[0])
	for _, tt := range []struct{ name, blob string }{
		{"wrong hash", blobname.Located(Hash([]byte("not file 0")), seq0)},
		{"another session's", blobname.Located(hOther, seqOther)},
		{"at a head", blobname.Located(h0, rev)},
		{"at a content-addressed blob", blobname.Located(Hash(content), blobRev-1)},
		{"at the head of the blob's commit", blobname.Located(Hash(content), blobRev)},
		{"past the end", blobname.Located(h0, headRev+1000)},
		{"content-addressed of located content", h0},
	} {
		_, err := s.Blob(ctx, "s", tt.blob)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s (%s): error %v, want ErrNotFound", tt.name, tt.blob, err)
		}
	}
	wantBlobs(t, s, "other", true, other...)
	wantBlobs(t, s, "s", true, Hash(content))
}

// testRemoveData: Remove deletes the located blobs it names written
// before its revision, and keeps those written at it or later.
func testRemoveData(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	old := putData(t, s, "s", "a", "b", "c")
	content, blobs := blob("addressed")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobs))
	late := putData(t, s, "s", "d")
	if n := must[int](t)(s.Remove(ctx, "s", rev, []string{old[0], old[1], late[0], Hash(content)})); n != 4 {
		t.Fatalf("Remove looked for %d blobs, want 4", n)
	}
	wantBlobs(t, s, "s", false, old[0], old[1], Hash(content))
	wantBlobs(t, s, "s", true, old[2], late[0])
	// Again: what is gone stays gone, and is no error.
	must[int](t)(s.Remove(ctx, "s", rev, old[:2]))
	wantBlobs(t, s, "s", true, old[2])
	for _, bad := range []string{"not a name", old[0] + "x", Hash(content) + "@0", Hash(content) + "@01"} {
		_, err := s.Remove(ctx, "s", rev, []string{old[2], bad})
		wantErr(t, err, ErrInvalid)
	}
	wantBlobs(t, s, "s", true, old[2])
}

// testSweepData: Sweep removes the located blobs below its revision that
// live does not keep, keeps those it keeps where they are, and those
// written after its revision whatever live says.
func testSweepData(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	data := putData(t, s, "s", "a", "b", "c", "c")
	a, blobsA := blob("addressed a")
	b, blobsB := blob("addressed b")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobsA))
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobsB))
	late := putData(t, s, "s", "d")
	live := map[string]bool{data[1]: true, data[3]: true, Hash(b): true}
	var asked []string
	sw := must[Swept](t)(s.Sweep(ctx, "s", rev, func(name string) bool {
		asked = append(asked, name)
		return live[name]
	}))
	if sw.Removed != 3 || sw.Kept < 2 {
		t.Errorf("swept %+v, want 3 removed (a, c and the content-addressed a) and the two located blobs kept", sw)
	}
	for _, n := range asked {
		if n == late[0] {
			t.Errorf("live was asked about %s, written after the sweep's revision", n)
		}
	}
	wantBlobs(t, s, "s", false, data[0], data[2], Hash(a))
	wantBlobs(t, s, "s", true, data[1], data[3], late[0], Hash(b))
	// Kept where they are: a second sweep finds them below its revision
	// at the same names.
	again := must[Swept](t)(s.Sweep(ctx, "s", rev, func(name string) bool { return live[name] || name == late[0] }))
	if again.Removed != 0 {
		t.Errorf("a second sweep removed %d blobs", again.Removed)
	}
}

// testDeleteData: deleting or expiring a session removes its located
// blobs, and a commit that finds its session deleted removes those stored
// for it since.
func testDeleteData(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	data := putData(t, s, "s", "a", "b")
	must[uint64](t)(s.Create(ctx, "kept", nil))
	kept := putData(t, s, "kept", "a")
	if err := s.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	wantBlobs(t, s, "s", false, data...)
	wantBlobs(t, s, "kept", true, kept...)

	// A commit that loaded the session before it was deleted, whose
	// located blobs were stored after.
	late := putData(t, s, "s", "late")
	_, blobs := blob("late blob")
	_, err := s.Commit(ctx, "s", rev, []byte("h"), blobs)
	wantErr(t, err, ErrNotFound)
	wantBlobs(t, s, "s", false, late...)
}

// testExpireData: expiring a session removes its located blobs.
func testExpireData(t *testing.T, s Store) {
	ctx := ctxT(t)
	must[uint64](t)(s.Create(ctx, "old", nil))
	old := putData(t, s, "old", "a", "b")
	time.Sleep(10 * time.Millisecond)
	must[uint64](t)(s.Create(ctx, "new", nil))
	kept := putData(t, s, "new", "a")
	if n := must[int](t)(s.Expire(ctx, must[Head](t)(s.Load(ctx, "new")).Time)); n != 1 {
		t.Fatalf("Expire deleted %d sessions, want 1", n)
	}
	wantBlobs(t, s, "old", false, old...)
	wantBlobs(t, s, "new", true, kept...)
}

// testPutDataInvalid: PutData of a content too large, or for a name that
// cannot name a session, is refused with ErrInvalid, and stores nothing:
// the next revision follows the last one before it.
func testPutDataInvalid(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	for _, tt := range []struct {
		name     string
		session  string
		contents [][]byte
	}{
		{"too large", "s", [][]byte{[]byte("fine"), make([]byte, MaxValue+1)}},
		{"bad session", "a.b", [][]byte{[]byte("fine")}},
		{"wildcard session", "*", [][]byte{[]byte("fine")}},
		{"empty session", "", nil},
	} {
		names, err := s.PutData(ctx, tt.session, tt.contents)
		if !errors.Is(err, ErrInvalid) || names != nil {
			t.Errorf("%s: %q, %v, want ErrInvalid", tt.name, names, err)
		}
	}
	if next := must[uint64](t)(s.Commit(ctx, "s", rev, nil, nil)); next != rev+1 {
		t.Errorf("the commit after refused PutData calls got revision %d, want %d", next, rev+1)
	}
	// The largest content passes.
	big := make([]byte, MaxValue)
	wantBlobs(t, s, "s", true, must[[]string](t)(s.PutData(ctx, "s", [][]byte{big}))...)
}

// testOnePerSubject: a head replaced many times, and a blob written again
// by commits and by a sweep, leave one message on their subjects (the JetStream store publishes each
// as a rollup of its subject), and a head's compare-and-swap still holds.
func testOnePerSubject(t *testing.T, s Store) {
	ctx := ctxT(t)
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	first := rev
	_, blobs := blob("again")
	dead, deadBlobs := blob("dead")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), deadBlobs))
	for range 5 {
		rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobs))
	}
	_, err := s.Commit(ctx, "s", first, []byte("stale"), nil)
	wantErr(t, err, ErrConflict)
	// A sweep that removes a blob writes the one it keeps again.
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), nil))
	sw := must[Swept](t)(s.Sweep(ctx, "s", rev, func(name string) bool { return name != Hash(dead) }))
	if sw.Removed != 1 || sw.Kept != 1 {
		t.Errorf("swept %+v, want the dead blob removed and the other kept", sw)
	}
	wantBlobs(t, s, "s", true, Hash([]byte("again")))
	wantBlobs(t, s, "s", false, Hash(dead))
	js, ok := s.(*JetStream)
	if !ok {
		return
	}
	info := must[*jetstream.StreamInfo](t)(js.state.Info(ctx, jetstream.WithSubjectFilter(js.name+".>")))
	for subject, n := range info.State.Subjects {
		if n != 1 {
			t.Errorf("%d messages on %s, want 1", n, subject)
		}
	}
	if len(info.State.Subjects) != 2 {
		t.Errorf("subjects %v, want the head's and the blob's", info.State.Subjects)
	}
}
