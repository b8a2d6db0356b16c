package workspace

import (
	"errors"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// EncodeTree implements statetree.Tree: a memory workspace is stored as its
// tree, and put gets only the nodes that differ from prev's at the same
// path (prev is the root a former EncodeTree or DecodeTree returned). A
// disk workspace stores nothing: its files live in their directory.
func (w *Workspace) EncodeTree(prev any, put statetree.Put) (string, any, error) {
	m, ok := w.st.(*memStore)
	if !ok {
		return "", nil, nil
	}
	root := m.t.Load()
	old, _ := prev.(*node)
	if err := encode(root, old, put); err != nil {
		return "", nil, err
	}
	h, err := root.hash()
	return h, root, err
}

// encode passes to put the blobs of n and of the nodes under it that differ
// from old, the node at the same path in the tree stored before (nil for
// none). An unchanged subtree is the same node, or one of the same hash,
// and is skipped without a look inside.
func encode(n, old *node, put statetree.Put) error {
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
	if !n.dir {
		data, err := n.file.bytes()
		if err != nil {
			return err
		}
		statetree.PutFile(data, put)
		return nil
	}
	b, err := n.dirBlob()
	if err != nil {
		return err
	}
	put(h, b)
	for itr := n.kids.Iterator(); !itr.Done(); {
		name, kid, _ := itr.Next()
		var was *node
		if old != nil && old.dir {
			was, _ = old.kids.Get(name)
		}
		if err := encode(kid, was, put); err != nil {
			return err
		}
	}
	return nil
}

// DecodeTree implements statetree.Tree: it replaces a memory workspace's
// tree by the one stored under hash. Directories are read at once; a
// file's content is read from get on its first use (read, grep, a version
// of a file larger than statetree.ChunkSize), so that a large workspace
// resumes after reading only its directories. get must stay usable for as
// long as the workspace.
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

func decode(hash string, get statetree.Getter) (*node, error) {
	b, err := get(hash)
	if err != nil {
		return nil, err
	}
	entries, err := statetree.DecodeDir(b)
	if err != nil {
		return nil, err
	}
	bld := immutable.NewSortedMapBuilder[string, *node](nil)
	for _, e := range entries {
		var kid *node
		if e.Dir {
			if kid, err = decode(e.Hash, get); err != nil {
				return nil, err
			}
		} else {
			h, size := e.Hash, e.Size
			kid = &node{size: size, file: &content{fetch: func() ([]byte, error) { return statetree.GetFile(h, size, get) }}}
			kid.keyOnce.Do(func() { kid.key = h })
		}
		bld.Set(e.Name, kid)
	}
	n := dirNode(bld.Map())
	n.keyOnce.Do(func() { n.key = hash })
	return n, nil
}
