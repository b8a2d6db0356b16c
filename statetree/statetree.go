// Package statetree stores the state of a session as a Merkle tree of
// content-addressed blobs, so that storing it after a call writes only
// what the call changed.
//
// # The tree
//
// Every blob is named by Hash of its bytes. The root blob lists, by name,
// the blob of each STATE slice (its value as the slice's codec gives it,
// see session.Persist; a value larger than MaxSliceBlob as the top of a
// tree of chunks) and the root directory of each per-session resource
// that keeps a tree of files (Tree), such as a memory workspace. A
// directory blob (EncodeDir) lists its entries sorted by name, each with
// its kind, size and hash; a file is one blob of its content or, when
// larger than ChunkSize, a list of the blobs of its chunks (PutFile). The
// call log is not in the tree: it is appended to the store on its own.
//
// # Storing a change
//
// Encode returns the new root and the blobs that the previous encoding did
// not hold at the same place: a slice whose value is the same value as
// before (values are immutable, so the same pointer is the same content)
// is not marshalled again, and a tree compares its nodes with the previous
// ones and descends only where they differ. Writing one file in a
// 10,000-file workspace yields the file, the directories on its path and
// the root. The blobs returned are a superset of those the new root uses
// and the previous one did not, which is what store.Store.Commit needs.
//
// # Loading
//
// Decode rebuilds a session's slices and trees from a root and a Getter,
// and returns the State the next Encode starts from. Live lists every blob
// a root uses, for store.Store.Sweep.
package statetree

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/wink-mcp/wink-mcp/session"
)

// Getter returns the content of the blob named hash.
type Getter func(hash string) ([]byte, error)

// Put receives a blob to store under its hash.
type Put func(hash string, blob []byte)

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

// State is a session's state as last encoded or decoded: its root and what
// the next Encode needs to skip what has not changed. It is immutable.
type State struct {
	// Root is the hash of the root blob.
	Root   string
	slices map[string]sliceRef
	trees  map[string]mark
}

type sliceRef struct {
	value  any
	hash   string          // of its blob, or of its list of chunks
	chunks map[string]bool // the hashes of its chunks, if it has some
}

type mark struct {
	mark any
	hash string
}

// root is the root blob.
type root struct {
	Slices map[string]string `json:"slices,omitempty"`
	// Chunked holds the slices stored as chunks: the hash of the list of
	// each one's chunks.
	Chunked map[string]string `json:"chunked,omitempty"`
	Trees   map[string]string `json:"trees,omitempty"`
}

// Hash returns the name of a blob: the hex SHA-256 of its content, as
// store.Hash.
func Hash(blob []byte) string {
	sum := sha256.Sum256(blob)
	return hex.EncodeToString(sum[:])
}

// Encode returns the state of s and the blobs it needs that prev, the state
// s was last encoded or decoded at (nil for none), did not hold at the same
// place. When nothing changed since prev (every slice holds the same value
// and every tree the same root), it returns prev and no blobs, without
// encoding the root again. s must not change meanwhile: the caller holds
// its call lock.
func Encode(s *session.Session, prev *State) (*State, map[string][]byte, error) {
	if prev == nil {
		prev = &State{}
	}
	blobs := map[string][]byte{}
	put := func(h string, b []byte) { blobs[h] = b }
	st := &State{slices: map[string]sliceRef{}, trees: map[string]mark{}}
	r := root{Slices: map[string]string{}, Chunked: map[string]string{}, Trees: map[string]string{}}
	// changed says whether anything may differ from prev; while it does
	// not, the root need not be encoded again.
	changed := prev.Root == ""
	for name, v := range s.Slices() {
		old, ok := prev.slices[name]
		if !ok || !same(old.value, v) {
			changed = true
			b, err := s.MarshalSlice(name, v)
			if err != nil {
				return nil, nil, fmt.Errorf("statetree: %w", err)
			}
			var chunks map[string]bool
			if len(b) > MaxSliceBlob {
				b, chunks = putSlice(b, old.chunks, put)
			}
			h := Hash(b)
			if h != old.hash {
				put(h, b)
			}
			old = sliceRef{value: v, hash: h, chunks: chunks}
		}
		st.slices[name] = old
		if old.chunks != nil {
			r.Chunked[name] = old.hash
		} else {
			r.Slices[name] = old.hash
		}
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
		r.Trees[name] = h
	}
	if !changed && len(st.slices) == len(prev.slices) && len(st.trees) == len(prev.trees) {
		return prev, nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("statetree: %w", err)
	}
	st.Root = Hash(b)
	if st.Root == prev.Root {
		return st, nil, nil
	}
	put(st.Root, b)
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

// Decode sets the STATE slices and the trees of s to those stored under
// rootHash, and returns the state the next Encode starts from. s should be
// new: slices that the root does not list are left as they are.
func Decode(s *session.Session, rootHash string, get Getter) (*State, error) {
	r, err := readRoot(rootHash, get)
	if err != nil {
		return nil, err
	}
	raw := get
	get = func(h string) ([]byte, error) { return fetch(raw, h) }
	st := &State{Root: rootHash, slices: map[string]sliceRef{}, trees: map[string]mark{}}
	for _, name := range slices.Sorted(maps.Keys(r.Slices)) {
		h := r.Slices[name]
		b, err := fetch(get, h)
		if err != nil {
			return nil, fmt.Errorf("statetree: slice %s: %w", name, err)
		}
		if err := s.UnmarshalSlice(name, b); err != nil {
			return nil, fmt.Errorf("statetree: %w", err)
		}
		st.slices[name] = sliceRef{value: s.Slices()[name], hash: h}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Chunked)) {
		h := r.Chunked[name]
		b, chunks, err := getSlice(h, get)
		if err != nil {
			return nil, fmt.Errorf("statetree: slice %s: %w", name, err)
		}
		if err := s.UnmarshalSlice(name, b); err != nil {
			return nil, fmt.Errorf("statetree: %w", err)
		}
		st.slices[name] = sliceRef{value: s.Slices()[name], hash: h, chunks: chunks}
	}
	for name, res := range s.Resources() {
		h, ok := r.Trees[name]
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
	for name := range r.Trees {
		if _, ok := st.trees[name]; !ok {
			return nil, fmt.Errorf("statetree: the session has no resource %s to load its tree into", name)
		}
	}
	return st, nil
}

// Live returns the hash of every blob the root rootHash uses, itself
// included. It reads the root and every directory and chunk list.
func Live(rootHash string, get Getter) (map[string]bool, error) {
	r, err := readRoot(rootHash, get)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{rootHash: true}
	for _, h := range r.Slices {
		live[h] = true
	}
	for _, h := range r.Chunked {
		mark := func(h string) { live[h] = true }
		if err := walkSlice(h, get, mark, func(c string) error { mark(c); return nil }); err != nil {
			return nil, fmt.Errorf("statetree: slice %s: %w", h, err)
		}
	}
	for _, h := range r.Trees {
		if err := liveDir(h, get, live); err != nil {
			return nil, err
		}
	}
	return live, nil
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

func readRoot(h string, get Getter) (root, error) {
	var r root
	b, err := fetch(get, h)
	if err != nil {
		return r, fmt.Errorf("statetree: root %s: %w", h, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("statetree: root %s: %w", h, err)
	}
	return r, nil
}

// errCorrupt reports a blob whose content is not what its name says.
var errCorrupt = errors.New("blob content does not match its hash")

// fetch gets the blob h and checks its content against h.
func fetch(get Getter, h string) ([]byte, error) {
	b, err := get(h)
	if err != nil {
		return nil, err
	}
	if Hash(b) != h {
		return nil, fmt.Errorf("%s: %w", h, errCorrupt)
	}
	return b, nil
}
