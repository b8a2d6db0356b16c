package workspace

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// node is a directory or a file of the memory tree. Nodes are immutable
// once in a tree: a change builds new nodes along the changed path and
// shares every other one with the old tree, so keeping the old root (a
// snapshot) costs nothing, and so does storing it again (statetree): a
// node's hash, once computed, is kept.
type node struct {
	dir  bool
	kids *immutable.SortedMap[string, *node] // a directory's entries by name
	size int64                               // a file's length
	file *content                            // a file's content

	keyOnce sync.Once
	key     string // the hash of the node's blob (statetree)
	keyErr  error
	verOnce sync.Once
	ver     string // a file's version token, hashVersion of its content
	verErr  error
}

// content is a file's bytes, in memory or fetched from the store on first
// read.
type content struct {
	mu    sync.Mutex
	data  []byte
	fetch func() ([]byte, error) // nil once data is loaded
}

func (c *content) bytes() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetch != nil {
		data, err := c.fetch()
		if err != nil {
			return nil, err
		}
		c.data, c.fetch = data, nil
	}
	return c.data, nil
}

func fileNode(data []byte) *node {
	return &node{size: int64(len(data)), file: &content{data: data}}
}

func dirNode(kids *immutable.SortedMap[string, *node]) *node {
	return &node{dir: true, kids: kids}
}

var emptyDir = dirNode(immutable.NewSortedMap[string, *node](nil))

// hash returns the hash of the node's blob: its content's for a file (see
// statetree.PutFile), its entries' for a directory (statetree.EncodeDir).
func (n *node) hash() (string, error) {
	n.keyOnce.Do(func() {
		if !n.dir {
			data, err := n.file.bytes()
			n.key, n.keyErr = statetree.PutFile(data, nil), err
			return
		}
		var b []byte
		if b, n.keyErr = n.dirBlob(); n.keyErr == nil {
			n.key = statetree.Hash(b)
		}
	})
	return n.key, n.keyErr
}

// dirBlob returns the blob of a directory.
func (n *node) dirBlob() ([]byte, error) {
	entries := make([]statetree.Entry, 0, n.kids.Len())
	for itr := n.kids.Iterator(); !itr.Done(); {
		name, kid, _ := itr.Next()
		h, err := kid.hash()
		if err != nil {
			return nil, err
		}
		entries = append(entries, statetree.Entry{Name: name, Dir: kid.dir, Size: kid.size, Hash: h})
	}
	return statetree.EncodeDir(entries)
}

// version returns a file's version token: hashVersion of its content,
// which for a file stored as one blob is the start of its hash.
func (n *node) version() (string, error) {
	n.verOnce.Do(func() {
		if n.size <= statetree.ChunkSize {
			var h string
			if h, n.verErr = n.hash(); n.verErr == nil {
				n.ver = h[:32]
			}
			return
		}
		var data []byte
		if data, n.verErr = n.file.bytes(); n.verErr == nil {
			n.ver = hashVersion(data)
		}
	})
	return n.ver, n.verErr
}

// walk calls fn for every node under n, in path order (a directory before
// its contents), with its path under prefix; fs.SkipDir for a directory
// skips its contents.
func (n *node) walk(prefix string, fn func(p string, n *node) error) error {
	for itr := n.kids.Iterator(); !itr.Done(); {
		name, kid, _ := itr.Next()
		p := join(prefix, name)
		if err := fn(p, kid); kid.dir && errors.Is(err, fs.SkipDir) {
			continue
		} else if err != nil {
			return err
		}
		if kid.dir {
			if err := kid.walk(p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookup returns the node at p ("" is the root).
func lookup(root *node, p string) (*node, bool) {
	n := root
	if p == "" {
		return n, true
	}
	for seg := range strings.SplitSeq(p, "/") {
		if !n.dir {
			return nil, false
		}
		kid, ok := n.kids.Get(seg)
		if !ok {
			return nil, false
		}
		n = kid
	}
	return n, true
}

// missing explains why nothing is at p: an ancestor is a file
// (*parentError), or errNotExist.
func missing(root *node, p string) error {
	n := root
	for _, a := range ancestors(p) {
		kid, ok := n.kids.Get(base(a))
		switch {
		case !ok:
			return errNotExist
		case !kid.dir:
			return &parentError{path: a}
		}
		n = kid
	}
	return errNotExist
}

// with returns the tree root with leaf at p, or with p removed when leaf is
// nil, making the missing directories above p. An ancestor that is a file
// is a *parentError.
func with(root *node, p string, leaf *node) (*node, error) {
	return withAt(root, "", p, leaf)
}

func withAt(dir *node, at, rest string, leaf *node) (*node, error) {
	name, below, deeper := strings.Cut(rest, "/")
	if !deeper {
		if leaf == nil {
			return dirNode(dir.kids.Delete(name)), nil
		}
		return dirNode(dir.kids.Set(name, leaf)), nil
	}
	p := join(at, name)
	kid, ok := dir.kids.Get(name)
	switch {
	case !ok:
		kid = emptyDir
	case !kid.dir:
		return nil, &parentError{path: p}
	}
	kid, err := withAt(kid, p, below, leaf)
	if err != nil {
		return nil, err
	}
	return dirNode(dir.kids.Set(name, kid)), nil
}

// buildFile returns root with a file of data at p, for a tree being built.
func buildFile(root *node, p string, data []byte) (*node, error) {
	if n, ok := lookup(root, p); ok && n.dir {
		return nil, errIsDir
	}
	return with(root, p, fileNode(data))
}

// memBackend is the memory backend: each session starts from base, its own
// copy in O(1).
type memBackend struct {
	base *node
}

func (b *memBackend) open() (store, error) {
	s := &memStore{}
	s.t.Store(b.base)
	return s, nil
}

func (b *memBackend) kind() string { return "memory" }

func (b *memBackend) Close() error { return nil }

// memStore is one session's memory tree, by its root directory, and,
// while a call's snapshot is taken, the paths the call changed
// (changes.go).
type memStore struct {
	t     atomic.Pointer[node]
	track *track
}

func (s *memStore) stat(p string) (Info, error) {
	t := s.t.Load()
	n, ok := lookup(t, p)
	if !ok {
		return Info{}, missing(t, p)
	}
	return Info{Path: p, Dir: n.dir, Size: n.size}, nil
}

// lstat is stat: a memory tree has no links, special files nor times.
func (s *memStore) lstat(p string) (Info, error) { return s.stat(p) }

func (s *memStore) mkdir(p string) (bool, error) {
	t := s.t.Load()
	if n, ok := lookup(t, p); ok {
		if !n.dir {
			return false, &parentError{path: p}
		}
		return false, nil
	}
	t, err := with(t, p, emptyDir)
	if err != nil {
		return false, err
	}
	s.set(t, p)
	return true, nil
}

func (s *memStore) move(src, dst string) error {
	t := s.t.Load()
	n, ok := lookup(t, src)
	if !ok {
		return missing(t, src)
	}
	t, err := with(t, src, nil)
	if err == nil {
		t, err = with(t, dst, n)
	}
	if err != nil {
		return err
	}
	s.set(t, src, dst)
	return nil
}

func (s *memStore) readFile(p string, max int64) ([]byte, error) {
	t := s.t.Load()
	n, ok := lookup(t, p)
	switch {
	case !ok:
		return nil, missing(t, p)
	case n.dir:
		return nil, errIsDir
	case max > 0 && n.size > max:
		return nil, errTooLarge
	}
	return n.file.bytes()
}

func (s *memStore) writeFile(p string, data []byte) error {
	t := s.t.Load()
	if n, ok := lookup(t, p); ok && n.dir {
		return errIsDir
	}
	t, err := with(t, p, fileNode(data))
	if err != nil {
		return err
	}
	s.set(t, p)
	return nil
}

func (s *memStore) remove(p string) (int, error) {
	t := s.t.Load()
	n, ok := lookup(t, p)
	if !ok || p == "" {
		return 0, missing(t, p)
	}
	files := 1
	if n.dir {
		files = 0
		_ = n.walk(p, func(_ string, kid *node) error {
			if !kid.dir {
				files++
			}
			return nil
		})
	}
	t, err := with(t, p, nil)
	if err != nil {
		return 0, err
	}
	s.set(t, p)
	return files, nil
}

func (s *memStore) list(p string) ([]Info, error) {
	t := s.t.Load()
	n, ok := lookup(t, p)
	switch {
	case !ok:
		return nil, missing(t, p)
	case !n.dir:
		return nil, errNotDir
	}
	out := make([]Info, 0, n.kids.Len())
	for itr := n.kids.Iterator(); !itr.Done(); {
		name, kid, _ := itr.Next()
		out = append(out, Info{Path: join(p, name), Dir: kid.dir, Size: kid.size})
	}
	return out, nil
}

func (s *memStore) walk(dir string, fn func(Info) error) error {
	t := s.t.Load()
	n, ok := lookup(t, dir)
	switch {
	case !ok:
		return missing(t, dir)
	case !n.dir:
		return errNotDir
	}
	return n.walk(dir, func(p string, kid *node) error {
		return fn(Info{Path: p, Dir: kid.dir, Size: kid.size})
	})
}

func (s *memStore) version(p string) (string, bool, error) {
	n, ok := lookup(s.t.Load(), p)
	if !ok || n.dir {
		return "", false, nil
	}
	v, err := n.version()
	return v, err == nil, err
}

// lock has nothing to do: no one else sees a session's tree.
func (s *memStore) lock(context.Context, string, []string) (func(), error) { return func() {}, nil }

// freeze implements freezer: the tree as it is now, O(1).
func (s *memStore) freeze() store {
	f := &memStore{}
	f.t.Store(s.t.Load())
	return f
}

// snapshot keeps the current tree: O(1), whatever its size. It starts
// tracking the paths the call changes.
func (s *memStore) snapshot() (undo, error) {
	t := s.t.Load()
	s.track = &track{paths: map[string]bool{}, tree: t}
	return memUndo{s: s, t: t, track: s.track}, nil
}

type memUndo struct {
	s     *memStore
	t     *node
	track *track
}

func (u memUndo) restore() error { u.s.t.Store(u.t); u.s.track = nil; return nil }
func (u memUndo) release()       { u.s.track = nil }
