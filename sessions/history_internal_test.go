package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
)

// disk is a resource whose every snapshot reports that the file big.txt
// changed outside the state, from content(n-1) to content(n), n counting
// the snapshots.
type disk struct{ n int }

func (d *disk) Snapshot() (session.Restorer, error) { d.n++; return d, nil }
func (d *disk) Restore() error                      { return nil }
func (d *disk) Release()                            {}
func (d *disk) Changes() ([]session.FileChange, error) {
	return []session.FileChange{{Path: "big.txt", Before: bigFile(d.n - 2), After: bigFile(d.n - 1), Existed: d.n > 1, Exists: true, Outside: true}}, nil
}

// bigFile is the content of big.txt after commit i: two chunks, the
// first shared by every version.
func bigFile(i int) []byte {
	if i < 0 {
		return nil
	}
	return append(make([]byte, statetree.ChunkSize), fmt.Sprintf("version %d", i)...)
}

// TestSweepKeepsHistoryBlobs: the sweep that the blobs of enough
// commits start keeps the states the history's records go back to, and
// the files they changed outside the state, and only those.
func TestSweepKeepsHistoryBlobs(t *testing.T) {
	value := func(i int) string { return fmt.Sprintf("v%02d", i) }
	for _, retention := range []int{1000, 2} {
		t.Run(fmt.Sprint(retention), func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			r := session.NewRegistry()
			k := session.NewKey[string]("value")
			session.Persist(r, k, session.JSON[string]())
			session.Provide(r, session.NewResourceKey[*disk]("disk"), func(*session.Session) (*disk, error) { return &disk{}, nil })
			m := newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Minute, History: retention})
			defer m.Close()
			u, err := m.Use(context.Background(), Request{Need: NeedNew})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var roots []string // of the state after each commit
			sweeping := func() bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				return m.sweeping[u.Handle]
			}
			for i := 0; !sweeping(); i++ {
				if i == 1000 {
					t.Fatal("1000 commits started no sweep")
				}
				tx, err := u.Session.Begin()
				if err != nil {
					t.Fatal(err)
				}
				session.Set(u.Session, k, value(i))
				if err := u.Commit(ctx, &Commit{CallID: fmt.Sprint(i), Tool: "set", Tx: tx}); err != nil {
					t.Fatal(err)
				}
				tx.Commit()
				m.mu.Lock()
				roots = append(roots, m.handles[u.Handle].state.Root)
				m.mu.Unlock()
			}
			u.Release()
			for deadline := time.Now().Add(10 * time.Second); sweeping(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the sweep did not end")
				}
			}
			n := len(roots)
			kept := min(n, retention+1) // the states and files of the last records
			hd := storedHead(t, st, u.Handle)
			hist, docs, err := m.headHistory(ctx, u.Handle, hd)
			if err != nil {
				t.Fatal(err)
			}
			// The history's blob may hold the documents of states that
			// its records no longer name, dropped from the tail's end
			// since it was written, until it is written again; they are
			// not blobs of their own, and the sweep keeps nothing of them.
			named := map[string]bool{}
			for _, c := range hist.Commits {
				named[c.Prev], named[c.Root] = true, true
			}
			for i := range n {
				want := i >= n-kept
				for what, blob := range map[string]string{"state": roots[i], "file's last chunk": statetree.Hash(bigFile(i)[statetree.ChunkSize:])} {
					_, err := st.Blob(context.Background(), u.Handle, blob)
					if err != nil && !errors.Is(err, store.ErrNotFound) {
						t.Fatal(err)
					}
					// A state is kept as a blob, or in the history's blob
					// or the head's tail.
					_, held := docs[blob]
					held = held && named[blob]
					if stored := err == nil || held; stored != want {
						t.Errorf("%s %d of %d: stored %v (%v), want %v", what, i, n, stored, err, want)
					}
				}
			}
			if _, err := st.Blob(context.Background(), u.Handle, statetree.Hash(bigFile(0)[:statetree.ChunkSize])); err != nil {
				t.Errorf("the chunk every version shares: %v", err)
			}
			d, err := m.storedHistory(context.Background(), u.Handle)
			if err != nil || len(d.Commits) != min(retention, n) {
				t.Fatalf("history: %+v, %v", d, err)
			}
		})
	}
}

// TestEncodeHistory: the history's blob reads back as the history and
// documents it was written from: every field of every record, the
// checkpoints, the lost commit and the documents the history names (up to
// docMax bytes; a larger one becomes a blob of its own). It is binary,
// unless a record names a state by something other than a hash, when it
// is JSON with its documents whole. Blobs of formats 3 and 4, JSON with
// their documents whole or chained, read as they did.
func TestEncodeHistory(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	docs := map[string][]byte{}
	hash := func(i int) string {
		doc := fmt.Appendf(nil, "wdoc1\x00\xff state %d, the same elsewhere", i)
		if i == 9 {
			doc = bytes.Repeat([]byte("x"), docMax+1)
		}
		h := statetree.Hash(doc)
		docs[h] = doc
		return h
	}
	commits := []session.HistoryCommit{
		{Seq: 4, CallID: "c4", Tool: "planning_setup_plan", Time: at, Prev: hash(0), Root: hash(1), State: []string{"planning.plan"}},
		{Seq: 5, CallID: `quote " and <tag> & \ back`, Tool: "write_file", Time: at.Add(time.Second), Prev: hash(1), Root: hash(2), Files: []session.HistoryFile{{Path: "a/é.txt", Outside: true, Before: hash(7), BeforeSize: 3, After: hash(8), AfterSize: 9}, {Path: "d", Dir: true}}, Undone: true},
		{Seq: 6, CallID: "c6", Tool: "session_undo", Time: at.Add(-time.Hour), Prev: hash(2), Root: hash(1), Restores: true},
		{Seq: 7, CallID: "c7", Tool: "session_undo", Time: at, Prev: hash(1), Root: hash(9)},
		{Seq: 8, CallID: "c8", Tool: "x", Time: at, Prev: hash(3), Root: hash(4)},
		{Seq: 9, CallID: "c9", Tool: "x", Time: at, Prev: hash(2), Root: hash(5)},
	}
	unknown := statetree.Hash([]byte("a blob of its own"))
	odd := slices.Clone(commits)
	odd[3].Prev = "not a hash"
	for _, c := range []struct {
		name string
		d    historyDoc
		json bool
	}{
		{"empty", historyDoc{Next: 1}, false},
		{"records", historyDoc{Next: 10, Commits: commits, Lost: 3}, false},
		{"a state not a hash", historyDoc{Next: 10, Commits: odd}, true},
		{"checkpoints", historyDoc{Next: 8, Commits: commits[:1], Checkpoints: []session.Checkpoint{{Name: "first \"one\"", Seq: 4, Root: hash(3), Time: at}, {Name: "older", Root: unknown, Time: at}, {Name: "here", Seq: 4, Root: hash(1), Time: at}}}, false},
		{"the first going back to a blob", historyDoc{Next: 8, Commits: []session.HistoryCommit{{Seq: 7, CallID: "c7", Tool: "x", Time: at, Prev: unknown, Root: hash(6)}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			blobs := map[string][]byte{}
			b, held, err := historyBlob(&c.d, func(r string) ([]byte, bool) { doc, ok := docs[r]; return doc, ok }, blobs)
			if err != nil {
				t.Fatal(err)
			}
			if json.Valid(b) != c.json || bytes.HasPrefix(b, historyMagic) == c.json {
				t.Errorf("the blob is JSON: %v, want %v:\n%q", json.Valid(b), c.json, b)
			}
			// The history as JSON reads it back (times in UTC, say).
			normal := func(d *historyDoc) historyDoc {
				j, err := json.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				var n historyDoc
				if err := json.Unmarshal(j, &n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			want := normal(&c.d)
			got, gotDocs, err := parseHistoryBlob(b)
			if err != nil {
				t.Fatalf("%v:\n%q", err, b)
			}
			if !reflect.DeepEqual(normal(got), want) {
				t.Errorf("the blob reads back as\n%+v\nwant\n%+v\n(%q)", *got, want, b)
			}
			wantDocs := map[string][]byte{}
			for _, cm := range c.d.Commits {
				for _, r := range []string{cm.Prev, cm.Root} {
					if doc, ok := docs[r]; ok && len(doc) <= docMax {
						wantDocs[r] = doc
					}
				}
			}
			for _, cp := range c.d.Checkpoints {
				if doc, ok := docs[cp.Root]; ok {
					wantDocs[cp.Root] = doc
				}
			}
			if len(gotDocs) != len(wantDocs) || len(held) != len(wantDocs) {
				t.Errorf("the blob holds %d documents (%d held), want %d", len(gotDocs), len(held), len(wantDocs))
			}
			for r, doc := range wantDocs {
				if !bytes.Equal(gotDocs[r], doc) || !bytes.Equal(held[r], doc) {
					t.Errorf("document %s reads back as %q (held %q), want %q", r, gotDocs[r], held[r], doc)
				}
			}
			if big := hash(9); slices.ContainsFunc(c.d.Commits, func(cm session.HistoryCommit) bool { return cm.Root == big }) != (blobs[big] != nil) || len(blobs) > 1 {
				t.Errorf("the blobs of their own: %d", len(blobs))
			}
			// As format 3 wrote it, the documents whole, and as format 4
			// did, chained.
			var chain, base []byte
			for _, doc := range wantDocs {
				chain, base = appendTail(chain, base, nil, doc), doc
			}
			for _, old := range []storedHistoryDoc{{HistoryLog: c.d, Docs: wantDocs}, {HistoryLog: c.d, Chain: chain}} {
				b, err := json.Marshal(old)
				if err != nil {
					t.Fatal(err)
				}
				got, gotDocs, err = parseHistoryBlob(b)
				if err != nil || !reflect.DeepEqual(*got, want) || len(gotDocs) != len(wantDocs) {
					t.Errorf("a blob of JSON reads back as %+v, %d documents, %v", got, len(gotDocs), err)
				}
			}
		})
	}
}

// TestHistoryNamesChangedSlices: a commit's record names no STATE slice
// as stored; its readers (the call's and the stored history) find the
// slices it changed from the states before and after, as a person reads
// them (a bookkeeping slice, whose text is always empty, is not named),
// once for each pair of states; a record that names some, as builds
// before wrote them, keeps them.
func TestHistoryNamesChangedSlices(t *testing.T) {
	st := store.NewMemory(store.Options{})
	r := session.NewRegistry()
	shown := session.NewKey[string]("shown")
	session.Persist(r, shown, session.JSON[string]())
	kept := session.NewKey[string]("kept")
	session.Persist(r, kept, session.Codec[string]{
		Marshal:   func(v string) ([]byte, error) { return []byte(v), nil },
		Unmarshal: func(b []byte) (string, error) { return string(b), nil },
		Text:      func(string) string { return "" }, // bookkeeping
	})
	m := newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, History: 20})
	defer m.Close()
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	for i, set := range []func(){
		func() { session.Set(u.Session, shown, "a") },
		func() { session.Set(u.Session, kept, "x") },
		func() { session.Set(u.Session, shown, "b"); session.Set(u.Session, kept, "y") },
	} {
		tx, err := u.Session.Begin()
		if err != nil {
			t.Fatal(err)
		}
		set()
		if err := u.Commit(ctx, &Commit{CallID: fmt.Sprint(i), Tool: "set", Tx: tx}); err != nil {
			t.Fatal(err)
		}
		tx.Commit()
	}
	sh, err := st.Load(ctx, u.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sh.Data, []byte(`"state"`)) {
		t.Errorf("the head's records name the slices they changed: %q", sh.Data)
	}
	want := [][]string{{"shown"}, nil, {"shown"}}
	for name, h := range map[string]session.History{"the call's": u.History(), "the stored": m.History(u.Handle)} {
		d, err := h.Log(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, c := range d.Commits {
			got = append(got, c.State)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s history names %q, want %q", name, got, want)
		}
	}
	if n := len(m.changedSlices.names); n != 3 {
		t.Errorf("the slices changed are kept for %d pairs of states, want 3", n)
	}

	// A record that names slices keeps them, whatever its states.
	d := &historyDoc{Next: 2, Commits: []session.HistoryCommit{{Seq: 1, Prev: "unreadable", Root: "unreadable", State: []string{"named before"}}}}
	got, err := m.withChanged(ctx, u.Handle, d, nil)
	if err != nil || !slices.Equal(got.Commits[0].State, []string{"named before"}) {
		t.Errorf("withChanged of a record naming its slices: %+v, %v", got, err)
	}
}
