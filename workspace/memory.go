package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// node is a directory or a file of the memory tree. Nodes are immutable
// once in a tree: a change builds new nodes along the changed path and
// shares every other one with the old tree, so keeping the old root (a
// snapshot) costs nothing, and so does storing it again (statetree): a
// node's hash, once computed, is kept.
type node struct {
	dir  bool
	kids merkle.Map[*node] // a directory's entries by name (see children)
	lazy *dirLoad          // or how a stored directory reads them
	size int64             // a file's length
	file *content          // a file's content

	keyOnce sync.Once
	key     string // the name of the node's blob (statetree): its hash, or a file's located name
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

// loaded returns the content when it is in memory.
func (c *content) loaded() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data, c.fetch == nil
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

func dirNode(kids merkle.Map[*node]) *node {
	return &node{dir: true, kids: kids}
}

// children returns a directory's entries. A directory of a stored tree
// reads them on first use, and panics with a *merkle.LoadError if it
// cannot (the store's methods return it: merkle.Recover).
func (n *node) children() merkle.Map[*node] {
	l := n.lazy
	if l == nil {
		return n.kids
	}
	l.once.Do(func() { l.kids, l.err = loadDir(l.hash, l.get) })
	if l.err != nil {
		panic(&merkle.LoadError{Err: l.err})
	}
	return l.kids
}

var emptyDir = dirNode(merkle.Map[*node]{})

// dirCodec is how a directory's entries are stored: a directory is a
// merkle.Map of its entries, stored in directory blobs
// (statetree.EncodeDir), one for a directory of up to merkle.SmallMax
// entries, a tree of them for a larger one.
var dirCodec *merkle.Codec[*node]

func init() { dirCodec = statetree.DirCodec(entryOf, nil) }

// entryOf describes n as an entry of its directory.
func entryOf(n *node) (statetree.Entry, error) {
	h, err := n.hash()
	return statetree.Entry{Dir: n.dir, Size: n.size, Hash: h}, err
}

// hash returns the name of the node's blob: its content's hash for a file
// (see statetree.PutFile), or its located name when its content was
// stashed as it was written (memStore.stashed) or read from a located
// entry; its entries' hash for a directory (merkle.Map.Hash).
func (n *node) hash() (string, error) {
	n.keyOnce.Do(func() {
		if !n.dir {
			data, err := n.file.bytes()
			n.key, n.keyErr = statetree.PutFile(data, nil), err
			return
		}
		n.key, n.keyErr = n.children().Hash(dirCodec)
	})
	return n.key, n.keyErr
}

// version returns a file's version token: hashVersion of its content,
// which for a file stored as one blob is the start of its hash, the
// start of its name whether content-addressed or located (HASH@SEQ), so
// that the same content has the same token however it was stored.
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

// holds reports whether the file node n holds data: byte for byte when
// its content is in memory, otherwise by its hash, without reading it
// from the store.
func (n *node) holds(data []byte) (bool, error) {
	if n.size != int64(len(data)) {
		return false, nil
	}
	if b, ok := n.file.loaded(); ok {
		return bytes.Equal(b, data), nil
	}
	name, err := n.hash()
	if err != nil {
		return false, err
	}
	h, _, _ := blobname.Split(name)
	return h == statetree.PutFile(data, nil), nil
}

// walk calls fn for every node under n, in path order (a directory before
// its contents), with its path under prefix; fs.SkipDir for a directory
// skips its contents.
func (n *node) walk(prefix string, fn func(p string, n *node) error) error {
	for name, kid := range n.children().All() {
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
		kid, ok := n.children().Get(seg)
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
		kid, ok := n.children().Get(base(a))
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
			return dirNode(dir.children().Delete(name)), nil
		}
		return dirNode(dir.children().Set(name, leaf)), nil
	}
	p := join(at, name)
	kid, ok := dir.children().Get(name)
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
	return dirNode(dir.children().Set(name, kid)), nil
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
// (changes.go). Its methods return the error of a part of a stored tree
// that cannot be read when first used (merkle.Recover).
type memStore struct {
	t     atomic.Pointer[node]
	track *track
	// stash stores a written file's content in the session's store, if
	// the session gave one (Workspace.SetStash).
	stash atomic.Pointer[statetree.Stash]
}

// stashed names the new file node n by the located name under which the
// session's stash stores its content, when there is a stash and the
// content is of at most statetree.ChunkSize bytes (a larger one is
// stored in chunks when the tree is encoded); n must not be in a tree
// yet.
func (s *memStore) stashed(n *node) error {
	stash := s.stash.Load()
	if stash == nil || *stash == nil || n.size > statetree.ChunkSize {
		return nil
	}
	data, _ := n.file.loaded()
	name, err := (*stash)(data)
	if err != nil {
		return fmt.Errorf("the file's content could not be stored: %w", err)
	}
	if _, seq, ok := blobname.Split(name); !ok || seq == 0 {
		return fmt.Errorf("the file's content was stored under %q, not a located name", name)
	}
	n.keyOnce.Do(func() { n.key = name })
	return nil
}

func (s *memStore) stat(p string) (_ Info, err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	n, ok := lookup(t, p)
	if !ok {
		return Info{}, missing(t, p)
	}
	return Info{Path: p, Dir: n.dir, Size: n.size}, nil
}

// lstat is stat: a memory tree has no links, special files nor times.
func (s *memStore) lstat(p string) (Info, error) { return s.stat(p) }

func (s *memStore) mkdir(p string) (_ bool, err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	if n, ok := lookup(t, p); ok {
		if !n.dir {
			return false, &parentError{path: p}
		}
		return false, nil
	}
	t, err = with(t, p, emptyDir)
	if err != nil {
		return false, err
	}
	s.set(t, p)
	return true, nil
}

func (s *memStore) move(src, dst string) (err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	n, ok := lookup(t, src)
	if !ok {
		return missing(t, src)
	}
	t, err = with(t, src, nil)
	if err == nil {
		t, err = with(t, dst, n)
	}
	if err != nil {
		return err
	}
	s.set(t, src, dst)
	return nil
}

func (s *memStore) readFile(p string, max int64) (_ []byte, err error) {
	defer merkle.Recover(&err)
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

// writeFile puts a file of data at p. A file that holds data already is
// kept as it is (its node, and so its stored blob); a new one's content
// is stashed before the tree changes, so that a stash that fails leaves
// the tree as it was.
func (s *memStore) writeFile(p string, data []byte) (err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	if n, ok := lookup(t, p); ok && n.dir {
		return errIsDir
	} else if ok {
		if same, err := n.holds(data); err != nil || same {
			return err
		}
	}
	n := fileNode(data)
	if t, err = with(t, p, n); err != nil {
		return err
	}
	if err := s.stashed(n); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	s.set(t, p)
	return nil
}

func (s *memStore) remove(p string) (_ int, err error) {
	defer merkle.Recover(&err)
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
	t, err = with(t, p, nil)
	if err != nil {
		return 0, err
	}
	s.set(t, p)
	return files, nil
}

func (s *memStore) list(p string) (_ []Info, err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	n, ok := lookup(t, p)
	switch {
	case !ok:
		return nil, missing(t, p)
	case !n.dir:
		return nil, errNotDir
	}
	out := make([]Info, 0, n.children().Len())
	for name, kid := range n.children().All() {
		out = append(out, Info{Path: join(p, name), Dir: kid.dir, Size: kid.size})
	}
	return out, nil
}

func (s *memStore) walk(dir string, fn func(Info) error) (err error) {
	defer merkle.Recover(&err)
	t := s.t.Load()
	n, ok := lookup(t, dir)
	switch {
	case !ok:
		return missing(t, dir)
	case !n.dir:
		return errNotDir
	}
	return n.walk(dir, func(p string, kid *node) error {
		in := Info{Path: p, Dir: kid.dir, Size: kid.size}
		if kid.dir {
			_, has := kid.kids.Get(ignoreFile)
			in.noIgnoreFile = !has
		} else {
			in.open = func() (opened, error) { return memFile{kid.file}, nil }
		}
		return fn(in)
	})
}

// scan is walk: a memory tree knows its sizes.
func (s *memStore) scan(dir string, fn func(Info) error) error { return s.walk(dir, fn) }

func (s *memStore) version(p string) (_ string, _ bool, err error) {
	defer merkle.Recover(&err)
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
