package formats

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/store"
)

// Format 1 → 2: a session's head held JSON, {"root", "owner", "history"},
// where root named a blob of JSON, {"slices", "chunked", "trees"}, that
// named the blob of each STATE slice, the chunk list of each large one and
// the root directory of each tree. In format 2 the head is a binary record
// (head2) that carries the state's root document (doc2) itself, and the
// history's records name root documents stored as blobs, not JSON roots.
// Directories, files, chunks, slices' values, the history's JSON and call
// log entries are as they were.
//
// Each session is migrated by one commit: the documents of its state and
// of every state its history names, and its history, as blobs, then its
// new head in place of the old one. A head already in format 2 is one a
// migration cut short had done. The JSON roots are left to the sessions'
// sweeps, which find them dead.

// head1 is a session's head in format 1.
type head1 struct {
	Root    string `json:"root,omitempty"`
	Owner   string `json:"owner"`
	History string `json:"history,omitempty"`
}

// root1 is the root blob of a state in format 1.
type root1 struct {
	Slices  map[string]string `json:"slices,omitempty"`
	Chunked map[string]string `json:"chunked,omitempty"`
	Trees   map[string]string `json:"trees,omitempty"`
}

// headsTimeout bounds the scan of every session's head, which a store of
// many sessions may take longer than a call's default deadline to make.
const headsTimeout = 10 * time.Minute

// head2Magic starts a head record of format 2.
var head2Magic = []byte("whd1")

// migrate1 migrates every session from format 1 to 2.
func migrate1(ctx context.Context, m *store.Migration) error {
	hctx, cancel := context.WithTimeout(ctx, headsTimeout)
	heads, err := m.Store.Heads(hctx)
	cancel()
	if err != nil {
		return err
	}
	slices.SortFunc(heads, func(a, b store.SessionHead) int { return strings.Compare(a.Session, b.Session) })
	for _, h := range heads {
		if bytes.HasPrefix(h.Data, head2Magic) {
			continue // done by a migration cut short
		}
		err := migrateSession1(ctx, m.Store, h)
		var skip errSkip
		if errors.As(err, &skip) {
			// Left as it is: the version that reads it fails on this
			// session alone, as it would have.
			m.Logger.Warn("a session of the store cannot be migrated, and is left as it is", "session", h.Session, "err", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", h.Session, err)
		}
		m.Point()
	}
	return nil
}

// errSkip is the error of a session whose stored state is not what format
// 1 holds.
type errSkip struct{ err error }

func (e errSkip) Error() string { return e.err.Error() }
func (e errSkip) Unwrap() error { return e.err }

// migrateSession1 migrates the session of head h (migrate1).
func migrateSession1(ctx context.Context, st store.Store, h store.SessionHead) error {
	var hd head1
	if err := json.Unmarshal(h.Data, &hd); err != nil {
		return errSkip{fmt.Errorf("its head is not of format 1: %w", err)}
	}
	blobs := map[string][]byte{}
	docs := map[string]string{} // the hash of a JSON root → of its document
	doc := func(root string) (string, []byte, error) {
		b, err := st.Blob(ctx, h.Session, root)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil, errSkip{fmt.Errorf("its root %s: %w", root, err)}
		}
		if err != nil {
			return "", nil, fmt.Errorf("its root %s: %w", root, err)
		}
		var r root1
		if err := json.Unmarshal(b, &r); err != nil {
			return "", nil, errSkip{fmt.Errorf("its root %s: %w", root, err)}
		}
		d, err := doc2(r)
		if err != nil {
			return "", nil, errSkip{fmt.Errorf("its root %s: %w", root, err)}
		}
		dh := store.Hash(d)
		docs[root], blobs[dh] = dh, d
		return dh, d, nil
	}
	var cur []byte
	if hd.Root != "" {
		var err error
		if _, cur, err = doc(hd.Root); err != nil {
			return err
		}
	}
	history := ""
	if hd.History != "" {
		b, err := st.Blob(ctx, h.Session, hd.History)
		if err != nil {
			return fmt.Errorf("its history: %w", err)
		}
		if b, err = history2(b, func(root string) (string, error) {
			if d, ok := docs[root]; ok {
				return d, nil
			}
			d, _, err := doc(root)
			if errors.As(err, new(errSkip)) {
				// A state the history can no longer go back to, as
				// before: undo says so when asked.
				return root, nil
			}
			return d, err
		}); err != nil {
			return err
		}
		history = store.Hash(b)
		blobs[history] = b
	}
	_, err := st.Commit(ctx, h.Session, h.Rev, head2(hd.Owner, history, cur), blobs)
	return err
}

// doc2 returns the root document of format 2 of the state whose root of
// format 1 is r: docMagic, then an entry per slice and tree, sorted by
// kind, then name: the kind byte ('s' a slice's blob, 'c' a chunked
// slice's list, 't' a tree's root directory), the name's length as a
// uvarint and the name, and the hash's 32 bytes.
func doc2(r root1) ([]byte, error) {
	type entry struct {
		kind       byte
		name, hash string
	}
	var entries []entry
	for kind, m := range map[byte]map[string]string{'s': r.Slices, 'c': r.Chunked, 't': r.Trees} {
		for name, hash := range m {
			entries = append(entries, entry{kind, name, hash})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.name, b.name))
	})
	b := []byte("wdoc1")
	for _, e := range entries {
		sum, err := hex.DecodeString(e.hash)
		if err != nil || len(sum) != 32 {
			return nil, fmt.Errorf("%q names no blob: %q", e.name, e.hash)
		}
		b = append(b, e.kind)
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = append(b, sum...)
	}
	return b, nil
}

// head2 returns a head record of format 2: head2Magic, a flag byte (1:
// it names a history), the owner's length as a uvarint and the owner, the
// history's 32 bytes if it has one, and the root document to the end
// (none for a session that holds what it started with).
func head2(owner, history string, doc []byte) []byte {
	b := append([]byte{}, head2Magic...)
	var flags byte
	if history != "" {
		flags = 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(owner)))
	b = append(b, owner...)
	if history != "" {
		sum, _ := hex.DecodeString(history) // a store.Hash
		b = append(b, sum...)
	}
	return append(b, doc...)
}

// history2 returns the history b with the root of every commit and
// checkpoint replaced by the hash that doc gives for it. Every other field
// is kept as it was.
func history2(b []byte, doc func(root string) (string, error)) ([]byte, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, errSkip{fmt.Errorf("its history: %w", err)}
	}
	for _, list := range []struct {
		key    string
		fields []string
	}{{"commits", []string{"prev", "root"}}, {"checkpoints", []string{"root"}}} {
		raw, ok := d[list.key]
		if !ok {
			continue
		}
		var items []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, errSkip{fmt.Errorf("its history's %s: %w", list.key, err)}
		}
		for _, it := range items {
			for _, f := range list.fields {
				var root string
				if err := json.Unmarshal(it[f], &root); err != nil || root == "" {
					continue
				}
				h, err := doc(root)
				if err != nil {
					return nil, err
				}
				it[f], _ = json.Marshal(h)
			}
		}
		d[list.key], _ = json.Marshal(items)
	}
	return json.Marshal(d)
}
