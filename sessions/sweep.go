package sessions

import (
	"context"
	"maps"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// heldHistory is what a session in memory holds of a head: its
// history's records (nil when not read), the root documents the
// history's blob holds, and blobs its commits wrote.
type heldHistory struct {
	doc     *historyDoc
	docs    map[string][]byte
	written []blob
}

// blob is a blob and its hash.
type blob struct {
	hash string
	data []byte
}

// headRoots returns the roots of what hd, a head of session h, keeps in
// the store (statetree.Index): its state's root document, and with a
// history, the history's blob, the root documents of the states its
// records (the tail's too) and checkpoints name, and the content of the
// files outside the state they changed; and the Getter that reads them,
// root documents the head and the history hold and the blobs held
// written first. The history is held's, when it holds one, or read from
// the store.
func (m *Manager) headRoots(ctx context.Context, h string, hd head, held heldHistory) ([]statetree.Root, statetree.Getter, error) {
	docs := make(map[string][]byte, len(held.written)+1)
	for _, b := range held.written {
		docs[b.hash] = b.data
	}
	var roots []statetree.Root
	if hd.Doc != nil {
		r := statetree.Hash(hd.Doc)
		docs[r] = hd.Doc
		roots = append(roots, statetree.DocRoot(r))
	}
	if hd.History == "" && len(hd.Tail) == 0 {
		return roots, m.getter(ctx, h, docs), nil
	}
	d := held.doc
	if d != nil {
		tail, err := tailDocs(hd.Tail)
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(docs, held.docs)
		maps.Copy(docs, tail)
	} else {
		var stored map[string][]byte
		var err error
		if d, stored, err = m.headHistory(ctx, h, hd); err != nil {
			return nil, nil, err
		}
		maps.Copy(docs, stored)
	}
	if hd.History != "" {
		roots = append(roots, statetree.BlobRoot(hd.History))
	}
	doc := func(r string) {
		if r != "" {
			roots = append(roots, statetree.DocRoot(r))
		}
	}
	file := func(hash string, size int64) {
		if hash != "" {
			roots = append(roots, statetree.FileRoot(hash, size))
		}
	}
	for _, c := range d.Commits {
		doc(c.Prev)
		doc(c.Root)
		for _, f := range c.Files {
			if !f.Dir && f.Outside {
				file(f.Before, f.BeforeSize)
				file(f.After, f.AfterSize)
			}
		}
	}
	for _, c := range d.Checkpoints {
		doc(c.Root)
	}
	return roots, m.getter(ctx, h, docs), nil
}

// appendUnused returns dead with the hashes of fresh that x does not
// hold and dead does not name appended: the blobs written since the last
// sweep that the roots of x do not use.
func appendUnused(dead, fresh []string, x *statetree.Index) []string {
	named := make(map[string]bool, len(dead))
	for _, h := range dead {
		named[h] = true
	}
	for _, h := range fresh {
		if !named[h] && !x.Has(h) {
			named[h] = true
			dead = append(dead, h)
		}
	}
	return dead
}
