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
	"strings"
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
// records in the head's tail, which fills up to as many records as the
// history keeps and then drops its oldest at each commit, writing no blob
// for the history; an undo writes the history's blob and empties the
// tail. A session loaded from the store has the history the committing
// one had, and goes back to a state whose document only the tail holds
// (the last but one, the one the oldest record goes back to), and, once
// the blob is written, to one whose document the blob holds.
func TestHistoryTail(t *testing.T) {
	const retention = 20
	st := store.NewMemory(store.Options{})
	opts := valueOptions(st, retention)
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
		session.Set(u.Session, valueKey, v)
		if err := u.Commit(ctx, &Commit{CallID: v, Tool: "set", ReadOnly: readOnly, Tx: tx}); err != nil {
			t.Fatal(err)
		}
		tx.Commit()
	}
	const unrecordedBefore = retention + 2
	commit := func(i int) {
		t.Helper()
		if i == unrecordedBefore {
			// A commit the history does not record (a read-only call's)
			// leaves a state the next record goes back to.
			set("read", true)
		}
		set(fmt.Sprint("v", i), false)
	}
	const commits = retention + 5
	for i := range commits {
		commit(i)
		hd := storedHead(t, st, h)
		tail, err := parseTail(hd.Tail)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(i+1, retention); len(tail.records) != want || hd.History != "" {
			t.Errorf("after commit %d the tail holds %d records, want %d, and the head names the history's blob %q", i, len(tail.records), want, hd.History)
		}
	}
	// Another manager on the store reads the same history back.
	d := readBack(t, m, opts, h)
	u.Release()
	other := newManager(opts)
	defer other.Close()
	if len(d.Commits) != retention || d.Commits[0].CallID != fmt.Sprint("v", commits-retention) {
		t.Fatalf("the history keeps %d records from %q, want %d from v%d", len(d.Commits), d.Commits[0].CallID, retention, commits-retention)
	}
	for i, c := range d.Commits {
		unrecorded := c.CallID == fmt.Sprint("v", unrecordedBefore)
		if i > 0 && (c.Prev == d.Commits[i-1].Root) == unrecorded || c.Root == "" {
			t.Errorf("record %d goes back to %q, after %q: %+v", i, c.Prev, d.Commits[i-1].Root, c)
		}
	}

	// It goes back to the state after the last commit but one, and to
	// the one the oldest record goes back to, whose documents only the
	// tail holds.
	v, err := other.Use(ctx, Request{Handle: h, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := v.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, back := range []struct {
		seq        uint64
		root, want string
	}{
		{d.Commits[len(d.Commits)-2].Seq, d.Commits[len(d.Commits)-2].Root, fmt.Sprint("v", commits-2)},
		{d.Commits[0].Seq - 1, d.Commits[0].Prev, fmt.Sprint("v", commits-retention-1)},
	} {
		if _, err := st.Blob(ctx, h, back.root); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the state to go back to is a blob (%v): the test wants it in the tail only", err)
		}
		if _, refused, err := v.History().RestoreTo(ctx, v.Session, back.seq, back.root); err != nil || refused != "" {
			t.Fatalf("RestoreTo = %q, %v", refused, err)
		}
		if got, _ := session.Get(v.Session, valueKey); got != back.want {
			t.Errorf("after going back to %d the value is %q, want %s", back.seq, got, back.want)
		}
	}
	if err := v.Commit(ctx, &Commit{CallID: "undo", Tool: "session_undo", Tx: tx}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	if hd := storedHead(t, st, h); len(hd.Tail) != 0 || hd.History == "" {
		t.Errorf("an undo's commit leaves a tail of %d bytes and names the blob %q: it writes the history's blob", len(hd.Tail), hd.History)
	}
	v.Release()

	// A third manager goes back to a state whose document the history's
	// blob holds.
	third := newManager(opts)
	defer third.Close()
	w, err := third.Use(ctx, Request{Handle: h, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	older := d.Commits[2]
	if _, err := st.Blob(ctx, h, older.Root); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the older state to go back to is a blob (%v): the test wants it in the history's blob", err)
	}
	tx, err = w.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Commit()
	if _, refused, err := w.History().RestoreTo(ctx, w.Session, older.Seq, older.Root); err != nil || refused != "" {
		t.Fatalf("RestoreTo = %q, %v", refused, err)
	}
	if got, ok := session.Get(w.Session, valueKey); got != older.CallID || !ok {
		t.Errorf("after going back to %d the value is %q, want %s", older.Seq, got, older.CallID)
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

// TestDropOldest: a tail without its oldest record holds the state that
// record reached as a document alone, the next record first, and the rest
// as it was; a tail whose oldest record is not followed by a record going
// back to the state it reached is left to the history's blob.
func TestDropOldest(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	docs := [][]byte{[]byte("wdoc1 state 0"), []byte("wdoc1 state 1"), []byte("wdoc1 state 2"), []byte("wdoc1 state 3")}
	root := func(i int) string { return statetree.Hash(docs[i]) }
	recs := []session.HistoryCommit{
		{Seq: 1, CallID: "p1", Tool: "set", Time: at, Prev: root(0), Root: root(1)},
		{Seq: 2, CallID: "p2", Tool: "set", Time: at.Add(time.Second), Prev: root(1), Root: root(2)},
		{Seq: 3, CallID: "p3", Tool: "other", Time: at.Add(2 * time.Second), Prev: root(2), Root: root(3)},
	}
	// build returns the tail of recs, after the state the first goes back
	// to (alone) if alone is set, else naming it.
	build := func(alone bool, recs []session.HistoryCommit) []byte {
		var tail, base []byte
		if alone {
			tail, base = appendTail(nil, nil, nil, docs[0]), docs[0]
		}
		for i := range recs {
			var before *session.HistoryCommit
			if i > 0 {
				before = &recs[i-1]
			}
			rec, err := appendRecord(nil, &recs[i], before, i == 0 && !alone || i > 0 && recs[i].Prev != recs[i-1].Root, false)
			if err != nil {
				t.Fatal(err)
			}
			d := docs[slices.Index([]string{root(0), root(1), root(2), root(3)}, recs[i].Root)]
			tail, base = appendTail(tail, base, rec, d), d
		}
		return tail
	}
	for _, alone := range []bool{true, false} {
		got, err := dropOldest(nil, build(alone, recs), &recs[0], &recs[1], docs[1])
		if err != nil {
			t.Fatal(err)
		}
		tl, err := parseTail(got)
		if err != nil {
			t.Fatal(err)
		}
		if len(tl.records) != 2 || tl.records[0].Seq != 2 || tl.records[0].Prev != root(1) || tl.records[0].Root != root(2) ||
			tl.records[1].Seq != 3 || tl.records[1].Tool != "other" || !tl.records[1].Time.Equal(recs[2].Time) || len(tl.docs) != 3 || !bytes.Equal(tl.docs[root(1)], docs[1]) {
			t.Errorf("alone %v: the tail without its oldest record reads as %+v, %d documents", alone, tl.records, len(tl.docs))
		}
	}
	// The next record goes back to another state.
	jump := slices.Clone(recs)
	jump[1].Prev = root(0)
	if _, err := dropOldest(nil, build(true, jump), &jump[0], &jump[1], docs[1]); !errors.Is(err, errBadTail) {
		t.Errorf("a next record going back elsewhere: %v, want errBadTail", err)
	}
	// Another record than the tail's oldest.
	if _, err := dropOldest(nil, build(true, recs[1:]), &recs[0], &recs[1], docs[1]); !errors.Is(err, errBadTail) {
		t.Errorf("a tail whose oldest record is another: %v, want errBadTail", err)
	}
	// A document alone after the oldest record.
	tail := build(true, recs[:1])
	tail = appendTail(tail, docs[1], nil, docs[2])
	if _, err := dropOldest(nil, tail, &recs[0], &recs[1], docs[1]); !errors.Is(err, errBadTail) {
		t.Errorf("a document alone after the oldest record: %v, want errBadTail", err)
	}
}

// valueKey is the STATE slice of the sessions of valueOptions: a string.
var valueKey = session.NewKey[string]("value")

// valueOptions returns the Options of a manager of sessions that hold one
// string (valueKey), in st, whose history keeps retention records.
func valueOptions(st store.Store, retention int) Options {
	r := session.NewRegistry()
	session.Persist(r, valueKey, session.JSON[string]())
	return Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, History: retention}
}

// setValue commits v as the value of u's session, by the call id.
func setValue(t *testing.T, u *Use, id, v string) {
	t.Helper()
	tx, err := u.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	session.Set(u.Session, valueKey, v)
	if err := u.Commit(context.Background(), &Commit{CallID: id, Tool: "set", Tx: tx}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
}

// valueBeforeOldest restores u's session to the state before the oldest
// record of d, its history, and returns its value then.
func valueBeforeOldest(t *testing.T, u *Use, d *historyDoc) string {
	t.Helper()
	tx, err := u.Session.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Commit()
	if _, refused, err := u.History().RestoreTo(context.Background(), u.Session, d.Commits[0].Seq-1, d.Commits[0].Prev); err != nil || refused != "" {
		t.Fatalf("RestoreTo = %q, %v", refused, err)
	}
	got, _ := session.Get(u.Session, valueKey)
	return got
}

// readBack reads the history of session h back through a new manager of
// opts, and fails the test unless it is the one m, which committed it,
// holds.
func readBack(t *testing.T, m *Manager, opts Options, h string) *historyDoc {
	t.Helper()
	m.mu.Lock()
	live := m.handles[h].hist
	m.mu.Unlock()
	other := newManager(opts)
	defer other.Close()
	d, err := other.storedHistory(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(d)
	want, _ := json.Marshal(live)
	if !bytes.Equal(got, want) {
		t.Fatalf("the history read back:\n%s\nthe committing manager's:\n%s", got, want)
	}
	return d
}

// TestTailDocsBounded: the documents a session in memory keeps for its
// tail stay bounded as the full tail drops a record at each commit, and
// still hold the state the oldest record goes back to.
func TestTailDocsBounded(t *testing.T) {
	const retention = 3
	m := newManager(valueOptions(store.NewMemory(store.Options{}), retention))
	defer m.Close()
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	for i := range 100 {
		setValue(t, u, fmt.Sprint(i), fmt.Sprint("v", i))
		m.mu.Lock()
		e := m.handles[u.Handle]
		m.mu.Unlock()
		if n := len(e.tailDocs); n > 2*retention+2 || e.histHash != "" {
			t.Fatalf("after commit %d the tail's documents are %d, the history's blob %q", i, n, e.histHash)
		}
	}
	d, err := m.storedHistory(ctx, u.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if got := valueBeforeOldest(t, u, d); got != "v96" {
		t.Errorf("back before the oldest of the last %d records: %q, want v96", retention, got)
	}
}

// TestTailRetentionLowered: a session whose full tail a process with a
// longer history wrote, loaded by one that keeps fewer records, writes
// the history's blob rather than dropping a record its tail does not
// start with, and its history reads back whole: the records kept, and the
// state the oldest goes back to.
func TestTailRetentionLowered(t *testing.T) {
	st := store.NewMemory(store.Options{})
	opts := func(retention int) Options { return valueOptions(st, retention) }
	ctx := context.Background()
	commits := func(u *Use, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			setValue(t, u, fmt.Sprint(i), fmt.Sprint("v", i))
		}
	}
	long := newManager(opts(6))
	u, err := long.Use(ctx, Request{Need: NeedNew, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	h := u.Handle
	commits(u, 0, 10)
	u.Release()
	long.Close()

	short := newManager(opts(3))
	defer short.Close()
	v, err := short.Use(ctx, Request{Handle: h, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	commits(v, 10, 12)
	d := readBack(t, short, opts(3), h)
	if len(d.Commits) != 3 || d.Commits[0].CallID != "9" || d.Commits[2].CallID != "11" {
		t.Fatalf("the history keeps %+v, want the records of calls 9 to 11", d.Commits)
	}
	if got := valueBeforeOldest(t, v, d); got != "v8" {
		t.Errorf("back before the oldest record kept: %q, want v8", got)
	}
}

// TestTailSweptWhileDropping: commits whose full tail drops a record at
// each, and that write blobs (values too large to travel in the root
// document), so that sweeps run beside them: the sweep reads the head it
// was started for while later commits write their tails into the buffer
// that head's tail was in (go test -race), and the history reads back as
// the committing manager holds it.
func TestTailSweptWhileDropping(t *testing.T) {
	opts := valueOptions(store.NewMemory(store.Options{}), 4)
	m := newManager(opts)
	defer m.Close()
	ctx := context.Background()
	u, err := m.Use(ctx, Request{Need: NeedNew, Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	big := strings.Repeat("x", 8<<10)
	for i := range 400 {
		setValue(t, u, fmt.Sprint(i), fmt.Sprint(i, big))
	}
	readBack(t, m, opts, u.Handle)
}
