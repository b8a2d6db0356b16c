package sessions

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// The history's tail. Keeping a commit for undo costs little more than
// keeping its root alive: the record of a commit (history.go), and the
// root document of the state it reached, travel in the session's head,
// which the commit writes anyway, rather than in blobs of their own. The
// head carries the records of the commits since the history's blob was
// last written, its tail, never more than the history keeps (so that
// every document the tail holds is one the history needs). Once the tail
// holds as many records as the history keeps, a commit drops the oldest
// of them, as the history does (dropOldest), while the tail holds no more
// than ringBytes and the record dropped changed no files outside the
// state; otherwise (a tail of tailBytes, a record whose loss the history
// must note) and at every commit that changes the history otherwise (a
// checkpoint, an undo or a restore), the commit writes the history's blob
// again, with the tail's records and documents, and the head's tail is
// empty again. A commit of a plan, say, thus writes no blob for the
// history at all, and encodes only its own record: a blob written costs
// a commit its message, and its removal once the history moved on, more
// than the head's few hundred bytes more; what a reader loads is the
// history's blob followed by the tail, the blob's records older than the
// tail's dropped as the history drops them.

const (
	// tailBytes is how many bytes the tail holds at most, beyond which a
	// commit writes the history's blob again.
	tailBytes = 64 << 10
	// ringBytes is how many bytes a full tail holds at most for a commit
	// to drop its oldest record rather than write the history's blob.
	ringBytes = 8 << 10
)

// appendTail returns tail with one more entry: rec, a record as a tail
// holds it (appendRecord; nil for a document alone, the state a record
// to come goes back to), and
// doc, the root document of the state it reached, written as what it
// changed of base, the document of the entry before (nil for the first).
// The record's root is left out (it is the hash of doc), and so is the
// state it goes back to when that is the root of the entry before it.
//
// An entry is the record's length (a uvarint) and the record, then the
// document: the lengths of what it shares with base at its start and at
// its end, and of what lies between (uvarints), and that. Consecutive
// states differ little (a plan's step, a directory's hash), so that an
// entry costs its record and the bytes its state changed, not its whole
// document: the head a commit writes grows by that, for each record the
// history keeps.
func appendTail(tail, base, rec, doc []byte) []byte {
	tail = binary.AppendUvarint(tail, uint64(len(rec)))
	tail = append(tail, rec...)
	return appendDoc(tail, base, doc)
}

// appendDoc returns b with doc written as what it changed of base (see
// appendTail).
func appendDoc(b, base, doc []byte) []byte {
	pre := commonPrefix(base, doc)
	suf := commonSuffix(base[pre:], doc[pre:])
	b = binary.AppendUvarint(b, uint64(pre))
	b = binary.AppendUvarint(b, uint64(suf))
	mid := doc[pre : len(doc)-suf]
	b = binary.AppendUvarint(b, uint64(len(mid)))
	return append(b, mid...)
}

// commonPrefix returns the length of the longest prefix a and b share.
// It compares eight bytes at a time: every commit compares its document
// with the one before.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// commonSuffix returns the length of the longest suffix a and b share,
// eight bytes at a time.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[len(a)-i-8:]) ^ binary.LittleEndian.Uint64(b[len(b)-i-8:]); x != 0 {
			return i + bits.LeadingZeros64(x)/8
		}
	}
	for ; i < n; i++ {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}

// errBadTail is the error of a head whose tail does not parse.
var errBadTail = errors.New("malformed history tail")

// parsedTail is a tail as read: its records, oldest first, the root
// documents it holds by their hashes, and the last of them (the base of
// the next entry's, see appendTail).
type parsedTail struct {
	records []session.HistoryCommit
	docs    map[string][]byte
	last    []byte
}

// parseTail returns the tail b.
func parseTail(b []byte) (parsedTail, error) { return readTail(b, true) }

// tailDocs returns the root documents the tail b holds, by their hashes,
// without reading its records.
func tailDocs(b []byte) (map[string][]byte, error) {
	t, err := readTail(b, false)
	return t.docs, err
}

// tailReader reads the fields of a tail, or of a head's tail as format 3
// wrote it (plainTail).
type tailReader []byte

// bytes returns the next field: its length (a uvarint), then its bytes.
func (r *tailReader) bytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil || n > uint64(len(*r)) {
		return nil, errBadTail
	}
	v := (*r)[:n]
	*r = (*r)[n:]
	return v, nil
}

// uvarint returns the next uvarint.
func (r *tailReader) uvarint() (uint64, error) {
	n, k := binary.Uvarint(*r)
	if k <= 0 {
		return 0, errBadTail
	}
	*r = (*r)[k:]
	return n, nil
}

// doc returns the next document, written as what it changed of base.
func (r *tailReader) doc(base []byte) ([]byte, error) {
	pre, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	suf, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if pre > uint64(len(base)) || suf > uint64(len(base))-pre {
		return nil, errBadTail
	}
	mid, err := r.bytes()
	if err != nil {
		return nil, err
	}
	doc := make([]byte, 0, int(pre)+len(mid)+int(suf))
	doc = append(doc, base[:pre]...)
	doc = append(doc, mid...)
	return append(doc, base[uint64(len(base))-suf:]...), nil
}

// readTail returns the tail b, its records only if records is set.
func readTail(b []byte, records bool) (parsedTail, error) {
	var t parsedTail
	r := tailReader(b)
	last := "" // the root of the entry before
	var before *session.HistoryCommit
	for len(r) > 0 {
		rec, err := r.bytes()
		if err != nil {
			return t, err
		}
		// A record that names its root has no document beside it.
		alone := len(rec) > 0 && rec[0]&recRoot != 0
		if alone && !records {
			continue
		}
		var doc []byte
		root := ""
		if !alone {
			if doc, err = r.doc(t.last); err != nil {
				return t, err
			}
			root = statetree.Hash(doc)
		}
		if len(rec) > 0 && records {
			c, err := readRecord(rec, before)
			if err != nil {
				return t, err
			}
			if alone {
				root = c.Root
			}
			c.Root = root
			if c.Prev == "" {
				if last == "" {
					return t, errBadTail
				}
				c.Prev = last
			}
			t.records = append(t.records, c)
			before = &t.records[len(t.records)-1]
		}
		last = root
		if alone {
			continue
		}
		if t.docs == nil {
			t.docs = map[string][]byte{}
		}
		t.docs[root], t.last = doc, doc
	}
	return t, nil
}

// rebaseTail returns tail with the document of its first entry written
// against to rather than from (see appendTail; nil for nothing), the rest
// as it is.
func rebaseTail(tail, from, to []byte) ([]byte, error) {
	r := tailReader(tail)
	rec, err := r.bytes()
	if err != nil {
		return nil, err
	}
	doc, err := r.doc(from)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(tail)+binary.MaxVarintLen32)
	out = binary.AppendUvarint(out, uint64(len(rec)))
	out = append(out, rec...)
	out = appendDoc(out, to, doc)
	return append(out, r...), nil
}

// firstEntry returns the record of the first entry of tail, as this
// process holds a tail (its first document whole, written against
// nothing), that document and the entries after it, without copying.
func firstEntry(tail []byte) (rec, doc, rest []byte, err error) {
	r := tailReader(tail)
	if rec, err = r.bytes(); err != nil {
		return nil, nil, nil, err
	}
	pre, err := r.uvarint()
	if err != nil {
		return nil, nil, nil, err
	}
	suf, err := r.uvarint()
	if err != nil {
		return nil, nil, nil, err
	}
	if pre != 0 || suf != 0 {
		return nil, nil, nil, errBadTail
	}
	if doc, err = r.bytes(); err != nil {
		return nil, nil, nil, err
	}
	return rec, doc, r, nil
}

// dropOldest returns, appended to dst (reusing its buffer), tail, as
// this process holds a tail (its first
// document whole), without its oldest record, oldest, whose state's root
// document is doc: that document stays, alone, as the state the record
// after it, next, goes back to, and next is written anew as the first
// record (against no record before it); the rest is as it was, read only
// to find where its entries end. It fails, for the caller to write the
// history's blob instead, unless the tail's oldest record is followed by
// a record that goes back to the state it reached, and its oldest record
// is oldest.
func dropOldest(dst, tail []byte, oldest, next *session.HistoryCommit, doc []byte) ([]byte, error) {
	r := tailReader(tail)
	// skip passes over an entry's document.
	skip := func() error {
		for range 2 {
			if _, err := r.uvarint(); err != nil {
				return err
			}
		}
		_, err := r.bytes()
		return err
	}
	rec, err := r.bytes()
	if err != nil {
		return nil, err
	}
	if len(rec) == 0 { // the state the oldest record goes back to
		if err := skip(); err != nil {
			return nil, err
		}
		if rec, err = r.bytes(); err != nil {
			return nil, err
		}
	}
	if len(rec) == 0 || rec[0]&(recRoot|recNextSeq) != 0 || oldest.Root != next.Prev {
		return nil, errBadTail
	}
	// The tail's oldest record is oldest: the first names its number.
	if seq, k := binary.Uvarint(rec[1:]); k <= 0 || seq != oldest.Seq {
		return nil, errBadTail
	}
	if err := skip(); err != nil {
		return nil, err
	}
	if rec, err = r.bytes(); err != nil {
		return nil, err
	}
	if len(rec) == 0 || rec[0]&(recPrev|recRoot) != 0 {
		return nil, errBadTail
	}
	// The next record's document, as it is: written against the oldest's.
	rest := r
	if err := skip(); err != nil {
		return nil, err
	}
	nextDoc := rest[:len(rest)-len(r)]
	first, err := appendRecord(nil, next, nil, false, false)
	if err != nil {
		return nil, err
	}
	out := slices.Grow(dst[:0], len(tail)+len(doc)+len(first)+64)
	out = appendTail(out, nil, nil, doc)
	out = binary.AppendUvarint(out, uint64(len(first)))
	out = append(out, first...)
	out = append(out, nextDoc...)
	return append(out, r...), nil
}

// plainTail returns the tail b of a head as format 3 wrote it (magic
// whd2), whose entries hold their records as JSON and their documents
// whole, as a tail of today.
func plainTail(b []byte) ([]byte, error) {
	r := tailReader(b)
	var tail, base []byte
	var before *session.HistoryCommit
	for len(r) > 0 {
		rec, err := r.bytes()
		if err != nil {
			return nil, err
		}
		doc, err := r.bytes()
		if err != nil {
			return nil, err
		}
		if len(rec) > 0 {
			var c session.HistoryCommit
			if err := json.Unmarshal(rec, &c); err != nil {
				return nil, fmt.Errorf("%w: %v", errBadTail, err)
			}
			// A record that names the state it goes back to keeps it.
			if rec, err = appendRecord(nil, &c, before, c.Prev != "", false); err != nil {
				return nil, fmt.Errorf("%w: %v", errBadTail, err)
			}
			before = &c
		}
		tail, base = appendTail(tail, base, rec, doc), doc
	}
	return tail, nil
}

// extend returns d with the records of t after its own, the oldest
// dropped beyond retention as a commit drops them (nextHistory).
func (t parsedTail) extend(d *historyDoc, retention int) *historyDoc {
	if len(t.records) == 0 {
		return d
	}
	d = cloneHistory(d)
	for _, c := range t.records {
		d.Commits = append(d.Commits, c)
		d.Next = max(d.Next, c.Seq+1)
	}
	d.Commits, d.Lost = trimHistory(d.Commits, d.Lost, retention)
	return d
}

// trimHistory drops the oldest of commits beyond retention, and returns
// what is left and lost, the newest commit dropped that changed files
// outside the state, or lost as it was.
func trimHistory(commits []session.HistoryCommit, lost uint64, retention int) ([]session.HistoryCommit, uint64) {
	for len(commits) > retention {
		old := commits[0]
		commits = commits[1:]
		if outsideFiles(old) {
			lost = old.Seq
		}
	}
	return commits, lost
}

// outsideFiles reports whether c changed files outside the state.
func outsideFiles(c session.HistoryCommit) bool {
	for _, f := range c.Files {
		if f.Outside {
			return true
		}
	}
	return false
}

// getter returns the way to read the blobs of session h, the root
// documents of docs (a tail's) first.
func (m *Manager) getter(ctx context.Context, h string, docs map[string][]byte) statetree.Getter {
	return func(hash string) ([]byte, error) {
		if d, ok := docs[hash]; ok {
			return d, nil
		}
		return m.store.Blob(ctx, h, hash)
	}
}
