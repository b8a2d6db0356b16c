package workspace

import (
	"errors"
	"sync"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// SetStash implements statetree.Stasher: a memory workspace stores the
// content of every file written from now on, of at most
// statetree.ChunkSize bytes, through stash as it is written, and names it
// in its tree by the located name stash returns; a stash that fails
// fails the write. It may be called before or between calls; nil stops
// it. A disk workspace stores nothing.
func (w *Workspace) SetStash(stash statetree.Stash) {
	if m, ok := w.st.(*memStore); ok {
		m.stash.Store(&stash)
	}
}

// EncodeTree implements statetree.Tree: a memory workspace is stored as its
// tree, and put gets only the nodes that differ from prev's at the same
// path and were not elsewhere in prev (a file or directory moved) (prev
// is the root a former EncodeTree or DecodeTree returned), and no
// located file, whose content is stored already (SetStash). A disk
// workspace stores nothing: its files live in their directory.
func (w *Workspace) EncodeTree(prev any, put statetree.Put) (_ string, _ any, err error) {
	defer merkle.Recover(&err)
	m, ok := w.st.(*memStore)
	if !ok {
		return "", nil, nil
	}
	root := m.t.Load()
	old, _ := prev.(*node)
	gone := map[string]bool{}
	if err := left(old, root, gone); err != nil {
		return "", nil, err
	}
	if err := (encoder{put: put, stored: gone}).encode(root, old); err != nil {
		return "", nil, err
	}
	h, err := root.hash()
	return h, root, err
}

// encoder stores a tree's changes.
type encoder struct {
	put statetree.Put
	// stored holds the hashes of nodes of the stored tree that are no
	// longer at their path: a node moved there is stored already.
	stored map[string]bool
}

// left adds to gone the hashes of the nodes of old, the tree stored, that
// are not at the same path in n (nil for none), visiting only where the
// trees differ.
func left(old, n *node, gone map[string]bool) error {
	if old == nil || old == n {
		return nil
	}
	h, err := old.hash()
	if err != nil {
		return err
	}
	gone[h] = true
	if !old.dir || n == nil || !n.dir {
		return nil
	}
	nk := n.children()
	for name, kid := range old.children().Changed(&nk) {
		now, _ := nk.Get(name)
		if err := left(kid, now, gone); err != nil {
			return err
		}
	}
	return nil
}

// encode passes to put the blobs of n and of the nodes under it that differ
// from old, the node at the same path in the tree stored before (nil for
// none). An unchanged subtree is the same node, or one of the same hash,
// and is skipped without a look inside; in a changed directory, only the
// parts of its tree (merkle.Map) that differ from old's are encoded and
// visited, so that a change in a directory of 100,000 entries costs what
// one in a directory of a hundred does.
func (e encoder) encode(n, old *node) error {
	if n == old {
		return nil
	}
	h, err := n.hash()
	if err != nil {
		return err
	}
	if old != nil {
		if oh, err := old.hash(); err == nil && oh == h {
			return nil
		}
	}
	if e.stored[h] {
		return nil // moved here from elsewhere in the stored tree
	}
	put := e.put
	if !n.dir {
		if _, seq, _ := blobname.Split(h); seq != 0 {
			return nil // stored as it was written
		}
		data, err := n.file.bytes()
		if err != nil {
			return err
		}
		statetree.PutFile(data, put)
		return nil
	}
	var stored *merkle.Map[*node]
	if old != nil && old.dir {
		k := old.children()
		stored = &k
	}
	kids := n.children()
	if _, err := kids.Store(stored, dirCodec, put); err != nil {
		return err
	}
	for name, kid := range kids.Changed(stored) {
		var was *node
		if stored != nil {
			was, _ = stored.Get(name)
		}
		if err := e.encode(kid, was); err != nil {
			return err
		}
	}
	return nil
}

// DecodeTree implements statetree.Tree: it replaces a memory workspace's
// tree by the one stored under hash. It reads the root directory's first
// blob; the rest of a directory, another directory, and a file's content
// are read from get on their first use (a lookup of a path through them,
// a listing, a read, grep), so that a session of 100,000 files resumes as
// fast as an empty one, and a call reads the directories on its paths.
// get must stay usable for as long as the workspace; a blob it cannot
// give when first used fails the call that needs it.
func (w *Workspace) DecodeTree(hash string, get statetree.Getter) (any, error) {
	m, ok := w.st.(*memStore)
	if !ok {
		return nil, errors.New("a disk workspace is not stored")
	}
	root, err := decode(hash, get)
	if err != nil {
		return nil, err
	}
	m.t.Store(root)
	return root, nil
}

// decode returns the directory stored under hash, its first blob read.
func decode(hash string, get statetree.Getter) (*node, error) {
	kids, err := loadDir(hash, get)
	if err != nil {
		return nil, err
	}
	n := dirNode(kids)
	n.keyOnce.Do(func() { n.key = hash })
	return n, nil
}

// lazyDir returns the directory stored under hash, to be read on first
// use.
func lazyDir(hash string, get statetree.Getter) *node {
	n := &node{dir: true, lazy: &dirLoad{hash: hash, get: get}}
	n.keyOnce.Do(func() { n.key = hash })
	return n
}

// dirLoad is how a directory of a stored tree reads its entries.
type dirLoad struct {
	hash string
	get  statetree.Getter
	once sync.Once
	kids merkle.Map[*node]
	err  error
}

// loadDir reads the entries of the directory stored under hash: its
// subdirectories to be read on first use, its files' content too, by
// their names, content-addressed or located.
func loadDir(hash string, get statetree.Getter) (merkle.Map[*node], error) {
	codec := statetree.DirCodec(entryOf, func(e statetree.Entry) (*node, error) {
		if e.Dir {
			return lazyDir(e.Hash, get), nil
		}
		h, size := e.Hash, e.Size
		kid := &node{size: size, file: &content{fetch: func() ([]byte, error) { return statetree.GetFile(h, size, get) }}}
		kid.keyOnce.Do(func() { kid.key = h })
		return kid, nil
	})
	return merkle.LoadMap(hash, get, codec)
}
