package sessions

import (
	"bytes"
	"context"
	"encoding/binary"
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

// TestHeadRecord: a head record reads back as it was written, with or
// without a history and a tail; one that is cut short, or whose magic and
// flags disagree about the tail, does not parse.
func TestHeadRecord(t *testing.T) {
	tail := appendTail(appendTail(nil, nil, nil, []byte("doc 0")), []byte("doc 0"), []byte(`{"seq":1}`), []byte("doc 1"))
	hash := fmt.Sprintf("%064x", 7)
	for _, h := range []head{
		{Owner: "alice"},
		{Owner: "alice", Doc: []byte("doc")},
		{Owner: "", History: hash, Doc: []byte("doc")},
		{Owner: "bob", History: hash, Tail: tail, Doc: []byte("doc")},
		{Owner: "bob", Tail: tail},
	} {
		b := h.marshal()
		if got, want := bytes.HasPrefix(b, headMagicTail), len(h.Tail) > 0; got != want {
			t.Errorf("%+v: starts with the tail's magic %v, want %v", h, got, want)
		}
		got, err := parseHead(b)
		if err != nil || got.Owner != h.Owner || got.History != h.History || !bytes.Equal(got.Tail, h.Tail) || !bytes.Equal(got.Doc, h.Doc) {
			t.Errorf("parseHead(marshal(%+v)) = %+v, %v", h, got, err)
		}
		// A commit appends to the tail it read: that must not write over
		// the document after it.
		_ = appendTail(got.Tail, []byte("doc 1"), []byte(`{"seq":9}`), []byte("later"))
		if !bytes.Equal(got.Doc, h.Doc) {
			t.Errorf("appending to the tail read from %+v changed the document to %q", h, got.Doc)
		}
	}
	withTail := head{Owner: "bob", Tail: tail, Doc: []byte("doc")}.marshal()
	for name, b := range map[string][]byte{
		"cut in the tail":             withTail[:len(withTail)-len("doc")-3],
		"a tail under the old magic":  append(slices.Clone(headMagic), withTail[len(headMagicTail):]...),
		"no tail under the new magic": append(slices.Clone(headMagicTail), head{Owner: "bob"}.marshal()[len(headMagic):]...),
	} {
		if _, err := parseHead(b); !errors.Is(err, errBadHead) {
			t.Errorf("%s: parseHead = %v, want errBadHead", name, err)
		}
	}
}

// TestHistoryTail: commits of a session with a history carry their
// records in the head's tail, and write the history's blob again every
// tailRecords of them, or at an undo; a session loaded from the store has
// the history the committing one had, and goes back to a state whose
// document only the tail holds, and to one whose document only the
// history's blob holds.
func TestHistoryTail(t *testing.T) {
	st := store.NewMemory(store.Options{})
	r := session.NewRegistry()
	k := session.NewKey[string]("value")
	session.Persist(r, k, session.JSON[string]())
	opts := Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, History: 20}
	m := newManager(opts)
	defer m.Close()
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	h := u.Handle
	set := func(v string, readOnly bool) {
		t.Helper()
		tx, err := u.Session.Begin()
		if err != nil {
			t.Fatal(err)
		}
		session.Set(u.Session, k, v)
		if err := u.Commit(ctx, &Commit{CallID: v, Tool: "set", ReadOnly: readOnly, Tx: tx}); err != nil {
			t.Fatal(err)
		}
		tx.Commit()
	}
	commit := func(i int) {
		t.Helper()
		if i == tailRecords+1 {
			// A commit the history does not record (a read-only call's)
			// leaves a state the next record goes back to.
			set("read", true)
		}
		set(fmt.Sprint("v", i), false)
	}
	stored := func() head {
		t.Helper()
		sh, err := st.Load(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		hd, err := readHead(h, sh.Data)
		if err != nil {
			t.Fatal(err)
		}
		return hd
	}
	for i := range tailRecords + 3 {
		commit(i)
		tail, err := parseTail(stored().Tail)
		if err != nil {
			t.Fatal(err)
		}
		// The tail fills up to tailRecords records; the commit after
		// writes the history's blob, with them and its own, and empties it.
		want := (i + 1) % (tailRecords + 1)
		if len(tail.records) != want {
			t.Errorf("after commit %d the tail holds %d records, want %d", i, len(tail.records), want)
		}
	}
	m.mu.Lock()
	live := m.handles[h].hist
	m.mu.Unlock()
	u.Release()

	// Another manager on the store reads the same history back.
	other := newManager(opts)
	defer other.Close()
	d, err := other.storedHistory(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(d)
	want, _ := json.Marshal(live)
	if !bytes.Equal(got, want) {
		t.Fatalf("the history read back:\n%s\nthe committing manager's:\n%s", got, want)
	}
	for i, c := range d.Commits {
		unrecorded := c.CallID == fmt.Sprint("v", tailRecords+1)
		if i > 0 && (c.Prev == d.Commits[i-1].Root) == unrecorded || c.Root == "" {
			t.Errorf("record %d goes back to %q, after %q: %+v", i, c.Prev, d.Commits[i-1].Root, c)
		}
	}

	// It goes back to the state after the last commit but one, whose
	// document only the tail holds.
	v, err := other.Use(ctx, Request{Handle: h, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	target := d.Commits[len(d.Commits)-2]
	if _, err := st.Blob(ctx, h, target.Root); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the state to go back to is a blob (%v): the test wants it in the tail only", err)
	}
	tx, err := v.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, refused, err := v.History().RestoreTo(ctx, v.Session, target.Seq, target.Root); err != nil || refused != "" {
		t.Fatalf("RestoreTo = %q, %v", refused, err)
	}
	if got, _ := session.Get(v.Session, k); got != fmt.Sprint("v", tailRecords+1) {
		t.Errorf("after going back one commit the value is %q, want v%d", got, tailRecords+1)
	}
	// And to an older state, whose document the history's blob holds.
	older := d.Commits[2]
	if _, err := st.Blob(ctx, h, older.Root); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the older state to go back to is a blob (%v): the test wants it in the history's blob", err)
	}
	if _, refused, err := v.History().RestoreTo(ctx, v.Session, older.Seq, older.Root); err != nil || refused != "" {
		t.Fatalf("RestoreTo = %q, %v", refused, err)
	}
	if got, _ := session.Get(v.Session, k); got != "v2" {
		t.Errorf("after going back to commit 3 the value is %q, want v2", got)
	}
	if err := v.Commit(ctx, &Commit{CallID: "undo", Tool: "session_undo", Tx: tx}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	if hd := stored(); len(hd.Tail) != 0 {
		t.Errorf("an undo's commit leaves a tail of %d bytes: it writes the history's blob", len(hd.Tail))
	}
}

// TestTailRecord: a record reads back from a tail as it was, each of its
// fields, written against the record before it or not (its number next
// to the one before, its id sharing a start with the one before, its
// tool the same); a record cut short, or naming the tool, number or id of
// a record before it that it has none of, does not parse.
func TestTailRecord(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	prev := statetree.Hash([]byte("before"))
	before := &session.HistoryCommit{Seq: 6, CallID: "c6", Tool: "write_file", Time: at}
	for _, c := range []struct {
		name               string
		rec                session.HistoryCommit
		before             *session.HistoryCommit
		withPrev, withRoot bool
	}{
		{"first", session.HistoryCommit{Seq: 1, CallID: "c1", Tool: "planning_setup_plan", Time: at}, nil, true, false},
		{"the same tool", session.HistoryCommit{Seq: 7, CallID: "c7", Tool: "write_file", Time: at.Add(time.Millisecond)}, before, false, false},
		{"another tool, earlier", session.HistoryCommit{Seq: 7, CallID: "", Tool: "edit_file", Time: at.Add(-time.Hour)}, before, true, false},
		{"a number not next, an id sharing nothing", session.HistoryCommit{Seq: 9, CallID: "x6", Tool: "write_file", Time: at}, before, false, false},
		{"an id the one before starts", session.HistoryCommit{Seq: 7, CallID: "c6", Tool: "write_file", Time: at}, before, false, false},
		{"an id longer", session.HistoryCommit{Seq: 7, CallID: "c6c6c6", Tool: "write_file", Time: at}, before, false, false},
		{"files and slices", session.HistoryCommit{Seq: 9, CallID: "c9 \"é\"", Tool: "session_undo", Time: at, Restores: true, Undone: true, State: []string{"planning.plan"},
			Files: []session.HistoryFile{{Path: "a.txt", Outside: true, Before: prev, BeforeSize: 5}, {Path: "d", Dir: true}}}, before, false, false},
		{"its root", session.HistoryCommit{Seq: 7, CallID: "c7", Tool: "x", Time: at, Root: statetree.Hash([]byte("after"))}, before, false, true},
		{"both states", session.HistoryCommit{Seq: 7, CallID: "c7", Tool: "x", Time: at, Root: statetree.Hash([]byte("after"))}, nil, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.withPrev {
				c.rec.Prev = prev
			}
			b, err := appendRecord(nil, &c.rec, c.before, c.withPrev, c.withRoot)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readRecord(b, c.before)
			want := c.rec
			want.Time = time.Unix(0, want.Time.UnixNano())
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("readRecord = %+v, %v\nwant %+v", got, err, want)
			}
			if b[0]&(recSameTool|recNextSeq|recSharedID) != 0 {
				if _, err := readRecord(b, nil); !errors.Is(err, errBadTail) {
					t.Errorf("the tool, number or id of no record before: %v, want errBadTail", err)
				}
			}
			for n := range len(b) {
				if c.rec.State != nil && n > 20 {
					break // cut in its JSON: checked once
				}
				if _, err := readRecord(b[:n], c.before); !errors.Is(err, errBadTail) {
					t.Errorf("cut to %d of %d bytes: %v, want errBadTail", n, len(b), err)
				}
			}
		})
	}
	// An id sharing more with the one before than it has.
	b, err := appendRecord(nil, &session.HistoryCommit{Seq: 7, CallID: "c6c6", Tool: "x", Time: at}, &session.HistoryCommit{Seq: 6, CallID: "c6c6"}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(b, &session.HistoryCommit{Seq: 6, CallID: "c6"}); !errors.Is(err, errBadTail) {
		t.Errorf("an id sharing 4 bytes of a 2-byte id: %v, want errBadTail", err)
	}
	for _, c := range []session.HistoryCommit{{Prev: "not a hash"}, {Prev: prev + "00"}, {Prev: prev[2:]}} {
		if _, err := appendRecord(nil, &c, nil, true, false); !errors.Is(err, errNotHash) {
			t.Errorf("a record going back to %q: %v, want errNotHash", c.Prev, err)
		}
		c.Root, c.Prev = c.Prev, ""
		if _, err := appendRecord(nil, &c, nil, false, true); !errors.Is(err, errNotHash) {
			t.Errorf("a record reaching %q: %v, want errNotHash", c.Root, err)
		}
	}
}

// TestTailDocuments: a tail's documents read back whole, each written as
// what it changed of the one before, whatever they share; one that
// claims more of the document before than there is does not parse; and
// a head of format 3, whose tail holds its documents whole, reads as the
// tail of today.
func TestTailDocuments(t *testing.T) {
	docs := [][]byte{
		[]byte("wdoc1 plan: bench 1; files: abc"),
		[]byte("wdoc1 plan: bench 2; files: abc"),
		[]byte("wdoc1 plan: bench 2; files: abc"),    // the same
		[]byte("wdoc1 plan: bench 2; files: abcdef"), // longer
		[]byte("wdoc1"),       // a prefix of the one before
		[]byte("wdoc1 wdoc1"), // the one before twice
		nil,                   // empty
		[]byte("something else entirely, not a doc at all"), // nothing shared
	}
	for _, name := range []string{"records", "a document alone first"} {
		t.Run(name, func(t *testing.T) {
			var tail, plain, base []byte
			var before *session.HistoryCommit
			for i, doc := range docs {
				var rec, recJSON []byte
				if i > 0 || name == "records" {
					c := session.HistoryCommit{Seq: uint64(i + 1), CallID: fmt.Sprint("c", i), Tool: fmt.Sprint("t", i/3), Time: time.Unix(1764331200, int64(i)*1e6)}
					var err error
					if rec, err = appendRecord(nil, &c, before, false, false); err != nil {
						t.Fatal(err)
					}
					if recJSON, err = json.Marshal(c); err != nil {
						t.Fatal(err)
					}
					before = &c
				}
				tail, base = appendTail(tail, base, rec, doc), doc
				plain = binary.AppendUvarint(plain, uint64(len(recJSON)))
				plain = append(plain, recJSON...)
				plain = binary.AppendUvarint(plain, uint64(len(doc)))
				plain = append(plain, doc...)
			}
			check := func(what string, b []byte) {
				t.Helper()
				tl, err := readTail(b, false)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				for _, doc := range docs {
					if got, ok := tl.docs[statetree.Hash(doc)]; !ok || !bytes.Equal(got, doc) {
						t.Errorf("%s: document %q reads back as %q (%v)", what, doc, got, ok)
					}
				}
				if !bytes.Equal(tl.last, docs[len(docs)-1]) {
					t.Errorf("%s: the last document is %q, want %q", what, tl.last, docs[len(docs)-1])
				}
			}
			check("tail", tail)
			if len(tail) >= len(plain) {
				t.Errorf("the tail takes %d bytes, no fewer than the %d of its documents whole", len(tail), len(plain))
			}
			// The head of format 3 reads as the tail of today.
			old := head{Owner: "bob", History: fmt.Sprintf("%064x", 7), Doc: []byte("doc")}
			b := old.marshal()
			b = append(slices.Clone(headMagicPlainTail), b[len(headMagic):]...)
			b[len(headMagicPlainTail)] |= headHasTail
			at := len(headMagicPlainTail) + 1 + 1 + len(old.Owner) + 32
			b = slices.Concat(b[:at], binary.AppendUvarint(nil, uint64(len(plain))), plain, b[at:])
			hd, err := parseHead(b)
			if err != nil || hd.Owner != old.Owner || hd.History != old.History || !bytes.Equal(hd.Doc, old.Doc) {
				t.Fatalf("parseHead(format 3) = %+v, %v", hd, err)
			}
			if !bytes.Equal(hd.Tail, tail) {
				t.Errorf("the tail of a head of format 3 reads as %q, want %q", hd.Tail, tail)
			}
			// Each record goes back to the state of the entry before it;
			// the first, with no entry before it, must name its own.
			tl, err := parseTail(tail)
			if name == "records" {
				if !errors.Is(err, errBadTail) {
					t.Errorf("a tail whose first record names no state before it: parseTail = %v, want errBadTail", err)
				}
				return
			}
			if err != nil || len(tl.records) != len(docs)-1 {
				t.Fatalf("parseTail = %d records, %v", len(tl.records), err)
			}
			for i, c := range tl.records {
				if c.Prev != statetree.Hash(docs[i]) || c.Root != statetree.Hash(docs[i+1]) || c.CallID != fmt.Sprint("c", i+1) || c.Tool != fmt.Sprint("t", (i+1)/3) || c.Time.UnixNano() != time.Unix(1764331200, int64(i+1)*1e6).UnixNano() {
					t.Errorf("record %d: %+v", i, c)
				}
			}
		})
	}
	// A document that takes more of the one before than it has.
	bad := appendTail(nil, nil, nil, []byte("ab"))
	bad = binary.AppendUvarint(bad, 0)
	bad = binary.AppendUvarint(bad, 2) // shares 2 bytes at its start
	bad = binary.AppendUvarint(bad, 1) // and 1 at its end: 3 of 2
	bad = binary.AppendUvarint(bad, 0)
	if _, err := readTail(bad, false); !errors.Is(err, errBadTail) {
		t.Errorf("a document sharing more than there is: readTail = %v, want errBadTail", err)
	}
}

// TestHeadTailFirstDocument: a head writes the document of its tail's
// first entry as what it changed of the head's own document, and reads it
// back whole; one that takes more of the head's document than there is
// does not parse.
func TestHeadTailFirstDocument(t *testing.T) {
	first := []byte("wdoc1 plan: objective bench 1, steps a b c; workspace: 0123456789abcdef")
	doc := []byte("wdoc1 plan: objective bench 2, steps a b c; workspace: 0123456789abcdef")
	tail := appendTail(nil, nil, []byte("record"), first)
	h := head{Owner: "bob", Tail: tail, Doc: doc}
	b := h.marshal()
	if whole := len(headMagicTail) + 2 + len(h.Owner) + 1 + len(tail) + len(doc); len(b) >= whole-len(first)+8 {
		t.Errorf("the head takes %d bytes, %d with the first document whole", len(b), whole)
	}
	got, err := parseHead(b)
	if err != nil || !bytes.Equal(got.Tail, tail) || !bytes.Equal(got.Doc, doc) {
		t.Fatalf("parseHead = %+v, %v; want the tail %q", got, err, tail)
	}
	// The same tail under a document shorter than the part it shares.
	bad := slices.Clone(b)
	bad = bad[:len(bad)-len(doc)+5]
	if _, err := parseHead(bad); !errors.Is(err, errBadHead) {
		t.Errorf("a first document taking more of the head's than there is: parseHead = %v, want errBadHead", err)
	}
}

// TestCommonEnds: commonPrefix and commonSuffix, which compare eight
// bytes at a time, find what a byte by byte comparison finds, for every
// length up to a few words and a difference at every place.
func TestCommonEnds(t *testing.T) {
	naive := func(a, b []byte, suffix bool) int {
		n := 0
		for n < len(a) && n < len(b) {
			i, j := n, n
			if suffix {
				i, j = len(a)-1-n, len(b)-1-n
			}
			if a[i] != b[j] {
				break
			}
			n++
		}
		return n
	}
	for la := range 20 {
		for lb := range 20 {
			a := bytes.Repeat([]byte{'x'}, la)
			for d := -1; d < lb; d++ {
				b := bytes.Repeat([]byte{'x'}, lb)
				if d >= 0 {
					b[d] = 'y'
				}
				if got, want := commonPrefix(a, b), naive(a, b, false); got != want {
					t.Errorf("commonPrefix(%q, %q) = %d, want %d", a, b, got, want)
				}
				if got, want := commonSuffix(a, b), naive(a, b, true); got != want {
					t.Errorf("commonSuffix(%q, %q) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}
