package sessions

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// The history's tail. Keeping a commit for undo costs little more than
// keeping its root alive: the record of a commit (history.go), and the
// root document of the state it reached, travel in the session's head,
// which the commit writes anyway, rather than in blobs of their own. The
// head carries the records of the commits since the history's blob was
// last written, its tail, never more than the history keeps (so that
// every document the tail holds is one the history needs); every
// tailRecords records (or retention, if fewer), or tailBytes of them,
// and at every commit that changes the history otherwise (a checkpoint, an
// undo or a restore), the commit writes the history's blob again, with
// the tail's records, and the tail's documents as blobs, and the head's
// tail is empty again. A commit thus writes no blob for the history but
// once in tailRecords, and encodes only its own record; what a reader
// loads is the history's blob followed by the tail.

const (
	// tailRecords is how many records the tail holds at most.
	tailRecords = 16
	// tailBytes is how many bytes the tail holds at most, beyond which a
	// commit writes the history's blob again.
	tailBytes = 64 << 10
)

// appendTail returns tail with one more entry: rec, a record's JSON (nil
// for a document alone, the state a record to come goes back to), and
// doc, the root document of the state it reached. The record's root is
// left out (it is the hash of doc), and so is the state it goes back to
// when that is the root of the entry before it.
func appendTail(tail, rec, doc []byte) []byte {
	tail = binary.AppendUvarint(tail, uint64(len(rec)))
	tail = append(tail, rec...)
	tail = binary.AppendUvarint(tail, uint64(len(doc)))
	return append(tail, doc...)
}

// errBadTail is the error of a head whose tail does not parse.
var errBadTail = errors.New("malformed history tail")

// parsedTail is a tail as read: its records, oldest first, and the root
// documents it holds by their hashes.
type parsedTail struct {
	records []session.HistoryCommit
	docs    map[string][]byte
}

// parseTail returns the tail b.
func parseTail(b []byte) (parsedTail, error) { return readTail(b, true) }

// tailDocs returns the root documents the tail b holds, by their hashes,
// without reading its records.
func tailDocs(b []byte) (map[string][]byte, error) {
	t, err := readTail(b, false)
	return t.docs, err
}

// readTail returns the tail b, its records only if records is set.
func readTail(b []byte, records bool) (parsedTail, error) {
	var t parsedTail
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errBadTail
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	last := "" // the root of the entry before
	for len(b) > 0 {
		rec, err := next()
		if err != nil {
			return t, err
		}
		doc, err := next()
		if err != nil {
			return t, err
		}
		root := statetree.Hash(doc)
		if len(rec) > 0 && records {
			var c session.HistoryCommit
			if err := json.Unmarshal(rec, &c); err != nil {
				return t, fmt.Errorf("%w: %v", errBadTail, err)
			}
			if c.Root == "" {
				c.Root = root
			}
			if c.Prev == "" {
				if last == "" {
					return t, errBadTail
				}
				c.Prev = last
			}
			t.records = append(t.records, c)
		}
		if t.docs == nil {
			t.docs = map[string][]byte{}
		}
		t.docs[root], last = doc, root
	}
	return t, nil
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
