package workspace

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/immutable"
)

// node is one entry of the memory tree: a directory or a file. Nodes are
// immutable once in a tree: a write puts a new node in a new tree.
type node struct {
	dir  bool
	data []byte
	hash *lazyHash
}

// lazyHash computes a file's version the first time it is asked for; the
// content never changes, so neither does the hash.
type lazyHash struct {
	once sync.Once
	v    string
}

func (n *node) version() string {
	n.hash.once.Do(func() { n.hash.v = hashVersion(n.data) })
	return n.hash.v
}

func fileNode(data []byte) *node { return &node{data: data, hash: &lazyHash{}} }

var dirNode = &node{dir: true}

// tree is the memory workspace: a persistent sorted map from normalised
// path to node, ordered by comparePaths so that a directory's contents
// follow it. The root is implicit. Every change returns a new tree that
// shares all untouched structure with the old one, so keeping the old one
// (a snapshot) costs nothing.
type tree = immutable.SortedMap[string, *node]

type pathComparer struct{}

func (pathComparer) Compare(a, b string) int { return comparePaths(a, b) }

func newTreeBuilder() *immutable.SortedMapBuilder[string, *node] {
	return immutable.NewSortedMapBuilder[string, *node](pathComparer{})
}

// skipSubtree is the smallest key after every path under p: '/' sorts
// lowest, and no segment holds a control character.
func skipSubtree(p string) string { return p + "\x01" }

// memBackend is the memory backend: each session starts from base, its own
// copy in O(1).
type memBackend struct {
	base *tree
}

func (b *memBackend) open() (store, error) {
	s := &memStore{}
	s.t.Store(b.base)
	return s, nil
}

func (b *memBackend) kind() string { return "memory" }

func (b *memBackend) Close() error { return nil }

// memStore is one session's memory tree.
type memStore struct {
	t atomic.Pointer[tree]
}

// missing explains why nothing is at p: an ancestor is a file
// (*parentError), or errNotExist.
func missing(t *tree, p string) error {
	for _, a := range ancestors(p) {
		if n, ok := t.Get(a); ok && !n.dir {
			return &parentError{path: a}
		} else if !ok {
			break
		}
	}
	return errNotExist
}

func (s *memStore) stat(p string) (Info, error) {
	if p == "" {
		return Info{Dir: true}, nil
	}
	t := s.t.Load()
	n, ok := t.Get(p)
	if !ok {
		return Info{}, missing(t, p)
	}
	return Info{Path: p, Dir: n.dir, Size: int64(len(n.data))}, nil
}

func (s *memStore) readFile(p string, max int64) ([]byte, error) {
	if p == "" {
		return nil, errIsDir
	}
	t := s.t.Load()
	n, ok := t.Get(p)
	switch {
	case !ok:
		return nil, missing(t, p)
	case n.dir:
		return nil, errIsDir
	case max > 0 && int64(len(n.data)) > max:
		return nil, errTooLarge
	}
	return n.data, nil
}

func (s *memStore) writeFile(p string, data []byte) error {
	t := s.t.Load()
	if n, ok := t.Get(p); ok && n.dir {
		return errIsDir
	}
	for _, a := range ancestors(p) {
		n, ok := t.Get(a)
		switch {
		case !ok:
			t = t.Set(a, dirNode)
		case !n.dir:
			return &parentError{path: a}
		}
	}
	s.t.Store(t.Set(p, fileNode(data)))
	return nil
}

func (s *memStore) remove(p string) (int, error) {
	t := s.t.Load()
	n, ok := t.Get(p)
	if !ok {
		return 0, missing(t, p)
	}
	files := 0
	if n.dir {
		var under []string
		itr := t.Iterator()
		itr.Seek(p + "/")
		for !itr.Done() {
			k, v, _ := itr.Next()
			if !within(k, p) {
				break
			}
			under = append(under, k)
			if !v.dir {
				files++
			}
		}
		for _, k := range under {
			t = t.Delete(k)
		}
	} else {
		files = 1
	}
	s.t.Store(t.Delete(p))
	return files, nil
}

func (s *memStore) list(p string) ([]Info, error) {
	t := s.t.Load()
	if p != "" {
		n, ok := t.Get(p)
		switch {
		case !ok:
			return nil, missing(t, p)
		case !n.dir:
			return nil, errNotDir
		}
	}
	out := []Info{}
	itr := t.Iterator()
	if p != "" {
		itr.Seek(p + "/")
	}
	for !itr.Done() {
		k, v, _ := itr.Next()
		if k == p {
			continue
		}
		if !within(k, p) {
			break
		}
		out = append(out, Info{Path: k, Dir: v.dir, Size: int64(len(v.data))})
		if v.dir {
			itr.Seek(skipSubtree(k))
		}
	}
	return out, nil
}

func (s *memStore) walk(dir string, fn func(Info) error) error {
	t := s.t.Load()
	if dir != "" {
		n, ok := t.Get(dir)
		switch {
		case !ok:
			return missing(t, dir)
		case !n.dir:
			return errNotDir
		}
	}
	itr := t.Iterator()
	if dir != "" {
		itr.Seek(dir + "/")
	}
	for !itr.Done() {
		k, v, _ := itr.Next()
		if !within(k, dir) {
			break
		}
		if v.dir {
			continue
		}
		if err := fn(Info{Path: k, Size: int64(len(v.data))}); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) version(p string) (string, bool, error) {
	n, ok := s.t.Load().Get(p)
	if !ok || n.dir {
		return "", false, nil
	}
	return n.version(), true, nil
}

// snapshot keeps the current tree: O(1), whatever its size.
// lock has nothing to do: no one else sees a session's tree.
func (s *memStore) lock(context.Context, string, []string) (func(), error) { return func() {}, nil }

func (s *memStore) snapshot() (undo, error) {
	return memUndo{s: s, t: s.t.Load()}, nil
}

type memUndo struct {
	s *memStore
	t *tree
}

func (u memUndo) restore() error { u.s.t.Store(u.t); return nil }
func (u memUndo) release()       {}
