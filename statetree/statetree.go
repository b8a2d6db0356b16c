// Package statetree stores the state of a session as a root document that
// the caller keeps in the session's head, and a Merkle tree of
// content-addressed blobs for what is too large to travel with it, so that
// storing the state after a call writes only what the call changed, and a
// call that changed a small value writes nothing but the head.
//
// # The tree
//
// Every blob is named by Hash of its bytes, except a file's content that
// the session stored as it was written (Stash): that blob's name is
// located (package blobname), its hash and the store's sequence of the
// message holding it, fixed when the file is made, so that every
// directory's hash is known whenever it is computed. The root document
// (State.Doc) holds each STATE slice (its value as the slice's codec
// gives it, see session.Persist): inline when it is at most InlineMax
// bytes, otherwise as the hash of its blob or, when larger than
// MaxSliceBlob, of the top of a tree of chunks; a slice whose codec
// stores it as blobs of its own (session.Codec.Store: the policies'
// memory, a merkle.Map) as the hash its codec gives. It names the root
// directory of each per-session resource that keeps a tree of files
// (Tree), such as a memory workspace. A directory blob (EncodeDir) lists
// its entries sorted by name, each with its kind, size and hash, and a
// located file's sequence; a directory of more than merkle.SmallMax
// entries is a merkle.Map of such blobs (DirCodec). A file is one blob
// of its content, content-addressed or located, or, when larger than
// ChunkSize, a list of the blobs of its chunks (PutFile), never located.
// Whoever reads a blob checks its content against the hash its name
// holds. The call log is not in the tree: it is appended to the store on
// its own.
//
// # Storing a change
//
// Encode returns the new root document and the blobs that the previous
// encoding did not hold at the same place: a slice whose value is the same
// value as before (values are immutable, so the same pointer is the same
// content) is not marshalled again, and a tree compares its nodes with the
// previous ones and descends only where they differ. Changing a plan
// yields a new document and no blob; writing one file in a 10,000-file
// workspace yields the file, the parts of the directories on its path
// that hold it, and the document. The blobs returned are a superset of those the new document
// uses and the previous one did not, which is what store.Store.Commit
// needs.
//
// # Loading
//
// Decode rebuilds a session's slices and trees from a root document and a
// Getter, and returns the State the next Encode starts from; DecodeRoot
// does so from the hash of a document stored as a blob. A tree or a
// merkle.Map reads its root blob then, and the rest from the Getter when
// first used. Live lists every blob a document uses; an Index keeps the
// blobs a set of roots uses, and when the roots change, says which blobs
// only the old ones used from what changed, for store.Store.Remove.
package statetree

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/session"
)

// Getter returns the content of the blob named hash: its hash, or a
// located name (package blobname).
type Getter func(hash string) ([]byte, error)

// Put receives a blob to store under its hash.
type Put func(hash string, blob []byte)

// Stash stores a file's content where the session's store keeps the
// contents of files as they are written (store.Store.PutData), and
// returns its located name (package blobname); the tree names the file by
// it, and Encode puts nothing for it.
type Stash func(content []byte) (name string, err error)

// Stasher is implemented by a Tree that stores a file's content as it is
// written, of at most ChunkSize bytes, through the Stash its session
// gives it, rather than with the tree's other blobs when it is encoded.
// Until SetStash, or with a nil Stash, it stores every content as any
// Tree does.
type Stasher interface {
	// SetStash makes stash the way the tree stores the contents written
	// from now on.
	SetStash(stash Stash)
}

// Tree is a per-session resource whose state is a tree of directories and
// files, stored in the format of EncodeDir and PutFile.
type Tree interface {
	// EncodeTree returns the hash of the resource's root directory, and
	// calls put with every blob of the tree that the tree encoded at prev
	// did not hold at the same path. prev is the mark a former EncodeTree
	// or DecodeTree of this resource returned, or nil. An empty hash means
	// the resource has nothing to store (its files live elsewhere).
	EncodeTree(prev any, put Put) (hash string, mark any, err error)
	// DecodeTree replaces the resource's tree by the one whose root
	// directory is hash, and returns its mark. get checks every blob
	// against its hash.
	DecodeTree(hash string, get Getter) (mark any, err error)
}

// InlineMax is the largest value of a STATE slice that travels inline in
// the root document. A commit rewrites the document whole, so a slice kept
// there costs every commit its bytes (about 2 µs of the store's CPU a
// KiB); one kept as a blob costs a commit that changes it a write of its
// own and its share of the sweep that later removes it (about 20 µs
// together). Up to 4 KiB, a slice that changes with most commits, such as
// a plan, is cheaper inline, and one that never changes costs no more
// than 9 µs a commit.
const InlineMax = 4 << 10

// State is a session's state as last encoded or decoded: its root
// document and what the next Encode needs to skip what has not changed. It
// is immutable.
type State struct {
	// Doc is the root document, which the caller stores in the session's
	// head; Root is its hash.
	Doc  []byte
	Root string

	slices map[string]sliceRef
	trees  map[string]mark
}

type sliceRef struct {
	value  any
	inline []byte          // its bytes, when it travels in the document
	hash   string          // else of its blob, of its list of chunks, or of its own blobs
	chunks map[string]bool // the hashes of its chunks, if it has some
	own    bool            // stored by its codec's Store
}

type mark struct {
	mark any
	hash string
}

// Hash returns the name of a blob: the hex SHA-256 of its content, as
// store.Hash.
func Hash(blob []byte) string { return merkle.Hash(blob) }

// Encode returns the state of s and the blobs it needs that prev, the state
// s was last encoded or decoded at (nil for none), did not hold at the same
// place. When nothing changed since prev (every slice holds the same value
// and every tree the same root), it returns prev and no blobs, without
// encoding the document again. s must not change meanwhile: the caller
// holds its call lock.
func Encode(s *session.Session, prev *State) (*State, map[string][]byte, error) {
	if prev == nil {
		prev = &State{}
	}
	var blobs map[string][]byte
	put := func(h string, b []byte) {
		if blobs == nil {
			blobs = map[string][]byte{}
		}
		blobs[h] = b
	}
	values := s.Slices()
	st := &State{slices: make(map[string]sliceRef, len(values)), trees: map[string]mark{}}
	// changed says whether anything may differ from prev; while it does
	// not, the document need not be encoded again.
	changed := prev.Doc == nil
	for name, v := range values {
		old, ok := prev.slices[name]
		if !ok || !same(old.value, v) {
			changed = true
			var prevOwn any
			if old.own {
				prevOwn = old.value
			}
			if h, own, err := s.StoreSlice(name, v, prevOwn, put); err != nil {
				return nil, nil, fmt.Errorf("statetree: %w", err)
			} else if own {
				st.slices[name] = sliceRef{value: v, hash: h, own: true}
				continue
			}
			b, err := s.MarshalSlice(name, v)
			if err != nil {
				return nil, nil, fmt.Errorf("statetree: %w", err)
			}
			ref := sliceRef{value: v}
			switch {
			case len(b) <= InlineMax:
				ref.inline = b
			case len(b) > MaxSliceBlob:
				b, ref.chunks = putSlice(b, old.chunks, put)
				fallthrough
			default:
				if ref.hash = Hash(b); ref.hash != old.hash {
					put(ref.hash, b)
				}
			}
			old = ref
		}
		st.slices[name] = old
	}
	for name, res := range s.Resources() {
		t, ok := res.(Tree)
		if !ok {
			continue
		}
		h, m, err := t.EncodeTree(prev.trees[name].mark, put)
		if err != nil {
			return nil, nil, fmt.Errorf("statetree: %s: %w", name, err)
		}
		if h == "" {
			continue
		}
		if old, ok := prev.trees[name]; !ok || old.hash != h || !same(old.mark, m) {
			changed = true
		}
		st.trees[name] = mark{mark: m, hash: h}
	}
	if !changed && len(st.slices) == len(prev.slices) && len(st.trees) == len(prev.trees) {
		return prev, nil, nil
	}
	st.Doc = st.encodeDoc()
	st.Root = Hash(st.Doc)
	if st.Root == prev.Root {
		return st, nil, nil
	}
	return st, blobs, nil
}

// same reports whether a and b are the same value: equal comparable values,
// such as the same pointer. Values that cannot be compared are never the
// same, and are marshalled again.
func same(a, b any) (eq bool) {
	t := reflect.TypeOf(a)
	if t == nil || t != reflect.TypeOf(b) || !t.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			eq = false // an interface inside held something not comparable
		}
	}()
	return a == b
}

// Decode sets the STATE slices and the trees of s to those of the root
// document doc, and returns the state the next Encode starts from. s
// should be new: slices that the document does not hold are left as they
// are.
func Decode(s *session.Session, doc []byte, get Getter) (*State, error) {
	entries, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	raw := get
	get = func(h string) ([]byte, error) { return fetch(raw, h) }
	st := &State{Doc: doc, Root: Hash(doc), slices: map[string]sliceRef{}, trees: map[string]mark{}}
	for _, e := range entries {
		var ref sliceRef
		var b []byte
		switch e.kind {
		case kindInline:
			ref.inline, b = e.data, e.data
		case kindBlob:
			ref.hash = e.hash
			if b, err = get(e.hash); err != nil {
				return nil, fmt.Errorf("statetree: slice %s: %w", e.name, err)
			}
		case kindChunked:
			ref.hash = e.hash
			if b, ref.chunks, err = getSlice(e.hash, get); err != nil {
				return nil, fmt.Errorf("statetree: slice %s: %w", e.name, err)
			}
		case kindOwn:
			if err := s.LoadSlice(e.name, e.hash, get); err != nil {
				return nil, fmt.Errorf("statetree: %w", err)
			}
			st.slices[e.name] = sliceRef{value: s.Slices()[e.name], hash: e.hash, own: true}
			continue
		default:
			continue
		}
		if err := s.UnmarshalSlice(e.name, b); err != nil {
			return nil, fmt.Errorf("statetree: %w", err)
		}
		ref.value = s.Slices()[e.name]
		st.slices[e.name] = ref
	}
	trees := map[string]string{}
	for _, e := range entries {
		if e.kind == kindTree {
			trees[e.name] = e.hash
		}
	}
	for name, res := range s.Resources() {
		h, ok := trees[name]
		if !ok {
			continue
		}
		t, ok := res.(Tree)
		if !ok {
			return nil, fmt.Errorf("statetree: resource %s does not keep a tree", name)
		}
		m, err := t.DecodeTree(h, get)
		if err != nil {
			return nil, fmt.Errorf("statetree: %s: %w", name, err)
		}
		st.trees[name] = mark{mark: m, hash: h}
	}
	for name := range trees {
		if _, ok := st.trees[name]; !ok {
			return nil, fmt.Errorf("statetree: the session has no resource %s to load its tree into", name)
		}
	}
	return st, nil
}

// DecodeRoot is Decode of the root document stored as the blob root, as
// a caller that keeps past states (a history) stores it.
func DecodeRoot(s *session.Session, root string, get Getter) (*State, error) {
	doc, err := fetch(get, root)
	if err != nil {
		return nil, fmt.Errorf("statetree: root %s: %w", root, err)
	}
	return Decode(s, doc, get)
}

// Live returns the name of every blob the root document doc uses, read
// whole: every directory, map node and chunk list. A sweep uses Index,
// which reads what changed; Live is the account of a state read whole
// against which Index and the blobs kept in a store are checked.
func Live(doc []byte, get Getter) (map[string]bool, error) {
	live := map[string]bool{}
	return live, addLive(live, doc, get)
}

func addLive(live map[string]bool, doc []byte, get Getter) error {
	entries, err := decodeDoc(doc)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.kind {
		case kindBlob:
			live[e.hash] = true
		case kindChunked:
			mark := func(h string) { live[h] = true }
			if err := walkSlice(e.hash, get, mark, func(c string) error { mark(c); return nil }); err != nil {
				return fmt.Errorf("statetree: slice %s: %w", e.name, err)
			}
		case kindTree:
			if err := liveDir(e.hash, get, live); err != nil {
				return err
			}
		case kindOwn:
			if err := liveMap(e.hash, get, live); err != nil {
				return fmt.Errorf("statetree: slice %s: %w", e.name, err)
			}
		}
	}
	return nil
}

func liveDir(h string, get Getter, live map[string]bool) error {
	if live[h] {
		return nil // an identical directory elsewhere, already walked
	}
	live[h] = true
	b, err := fetch(get, h)
	if err != nil {
		return fmt.Errorf("statetree: directory %s: %w", h, err)
	}
	if kids, ok, err := merkle.Kids(b); ok {
		// A node of a large directory's tree (merkle.Map): its kids
		// are nodes or leaves, each a part of the directory.
		for _, k := range kids {
			if err == nil {
				err = liveDir(k, get, live)
			}
		}
		return err
	}
	entries, err := DecodeDir(b)
	if err != nil {
		return fmt.Errorf("statetree: directory %s: %w", h, err)
	}
	for _, e := range entries {
		switch {
		case e.Dir:
			err = liveDir(e.Hash, get, live)
		case e.Size > ChunkSize && !live[e.Hash]:
			var chunks []string
			if chunks, err = readChunks(e.Hash, e.Size, get); err == nil {
				for _, c := range chunks {
					live[c] = true
				}
			}
		}
		if err != nil {
			return err
		}
		live[e.Hash] = true
	}
	return nil
}

// liveMap adds to live the blobs of the merkle.Map stored under h, whose
// leaves name no blobs.
func liveMap(h string, get Getter, live map[string]bool) error {
	if live[h] {
		return nil
	}
	live[h] = true
	b, err := fetch(get, h)
	if err != nil {
		return err
	}
	kids, _, err := merkle.Kids(b)
	for _, k := range kids {
		if err == nil {
			err = liveMap(k, get, live)
		}
	}
	return err
}

// errCorrupt reports a blob whose content is not what its name says.
var errCorrupt = errors.New("blob content does not match its hash")

// fetch gets the blob named h and checks its content against the hash
// the name holds.
func fetch(get Getter, h string) ([]byte, error) {
	hash, _, ok := blobname.Split(h)
	if !ok {
		return nil, fmt.Errorf("statetree: %q is not a blob's name: %w", h, errFormat)
	}
	b, err := get(h)
	if err != nil {
		return nil, err
	}
	if Hash(b) != hash {
		return nil, fmt.Errorf("%s: %w", h, errCorrupt)
	}
	return b, nil
}
