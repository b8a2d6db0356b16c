// Package merkle is a persistent sorted map kept as a Merkle search tree of
// content-addressed blobs (Map), so that storing a version of it costs
// what changed since the last one stored, whatever its size: the
// directories of a session's workspace, the policies' memory of the files
// it read (statetree stores them).
package merkle

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"sort"
	"sync"
)

// Map is a persistent sorted map from names to values, kept as a Merkle
// search tree so that storing a version of it costs what changed since
// the last one stored: a directory of 100,000 entries, the policies'
// memory of every file a session read.
//
// The tree's shape depends only on its keys. A key's level is the number
// of times 2^fanBits divides a hash of it (one in 32 keys has level 1 or
// more, one in 1,024 level 2 or more, ...). A leaf holds the entries up to
// and including a key of level 1 or more; a node of height h holds the
// nodes of height h-1 up to and including one whose last key has level
// h+1 or more. So a leaf holds 32 entries on average, a node 32 nodes, and
// inserting or removing a key changes its leaf and one node on each level
// above it, and splits or joins two of them at most: whatever the order of
// the changes, equal maps are equal trees, with equal hashes.
//
// A map of up to SmallMax entries is stored as one leaf blob whatever its
// shape (for a directory, the one blob an older build stored); a larger
// one as its tree: leaves in the format of the map's codec, nodes in the
// format of nodeHeader. Each node keeps its hash once computed, so that a
// map stored again encodes and hashes only the nodes a change made.
//
// A Map is a value: the zero Map is empty, and Set and Delete return a new
// one, sharing every unchanged node with the old.
type Map[V any] struct {
	root *mnode[V]
	// stored is the hash under which an older build stored the map as one
	// blob of more than SmallMax entries, while it is unchanged; such a map
	// is stored as a tree when a change is stored.
	stored string
}

// SmallMax is the most entries of a map stored as one blob.
const SmallMax = 64

// fanBits sets the average fan-out of a Map's tree: 2^fanBits. With 32,
// a leaf of a directory is about 1.5 KiB and a node about as much, so
// that a change to a map of 100,000 entries stores about 5 KiB of it.
const fanBits = 5

// Codec is how the entries of a Map[V] are stored.
type Codec[V any] struct {
	// Leaf returns the blob of the entries keys and vals (sorted by key).
	Leaf func(keys []string, vals []V) ([]byte, error)
	// DecodeLeaf returns the entries of a blob of Leaf, sorted by key; ok
	// is false when b is not such a blob.
	DecodeLeaf func(b []byte) (keys []string, vals []V, ok bool, err error)
}

// mnode is a node of a Map's tree. It is immutable once made but for its
// hash, computed once, and for the content that a node read from the store
// reads on first use (ensure).
type mnode[V any] struct {
	height  uint8
	last    string // its last key
	lastLvl uint8  // and its level
	count   int    // the entries under it
	// lazy, for a node read from the store, reads the rest on first use.
	lazy *lazy[V]

	keys []string    // a leaf's keys; a node's kids' last keys
	lvls []uint8     // the level of each key
	vals []V         // a leaf's values
	kids []*mnode[V] // a node's kids

	mu   sync.Mutex
	hash string // its blob's hash, once computed
	blob []byte // its blob, from computing its hash until it is put

	flatOnce sync.Once
	flat     string // the hash of the entries under it as one leaf blob
	flatErr  error
}

// level returns the level of key: how many times 2^fanBits divides a
// hash of it (64-bit FNV-1a, mixed by splitmix64's finaliser), which is
// the same in every process.
func level(key string) uint8 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	if h == 0 {
		return 64 / fanBits
	}
	return uint8(bits.TrailingZeros64(h) / fanBits)
}

// Len returns the number of entries.
func (m Map[V]) Len() int {
	if m.root == nil {
		return 0
	}
	return m.root.count
}

// Get returns the value of key, and whether the map holds it.
func (m Map[V]) Get(key string) (V, bool) {
	n := m.root
	for n != nil {
		n.ensure()
		i := sort.SearchStrings(n.keys, key)
		if i == len(n.keys) {
			break
		}
		if n.height == 0 {
			if n.keys[i] == key {
				return n.vals[i], true
			}
			break
		}
		n = n.kids[i]
	}
	var zero V
	return zero, false
}

// All yields the entries in key order.
func (m Map[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if m.root != nil {
			m.root.all(yield)
		}
	}
}

// From yields the entries whose key is from or after it, in key order,
// visiting none before it.
func (m Map[V]) From(from string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if m.root != nil {
			m.root.from(from, yield)
		}
	}
}

func (n *mnode[V]) from(from string, yield func(string, V) bool) bool {
	n.ensure()
	i := sort.SearchStrings(n.keys, from)
	if n.height == 0 {
		for ; i < len(n.keys); i++ {
			if !yield(n.keys[i], n.vals[i]) {
				return false
			}
		}
		return true
	}
	if i == len(n.kids) || !n.kids[i].from(from, yield) {
		return false
	}
	for _, kid := range n.kids[i+1:] {
		if !kid.all(yield) {
			return false
		}
	}
	return true
}

func (n *mnode[V]) all(yield func(string, V) bool) bool {
	n.ensure()
	if n.height == 0 {
		for i, k := range n.keys {
			if !yield(k, n.vals[i]) {
				return false
			}
		}
		return true
	}
	for _, kid := range n.kids {
		if !kid.all(yield) {
			return false
		}
	}
	return true
}

// Set returns the map with key set to v.
func (m Map[V]) Set(key string, v V) Map[V] {
	return m.update(key, v, false)
}

// Delete returns the map without key.
func (m Map[V]) Delete(key string) Map[V] {
	return m.update(key, *new(V), true)
}

func (m Map[V]) update(key string, v V, del bool) Map[V] {
	if m.root == nil {
		if del {
			return m
		}
		return Map[V]{root: newLeaf([]string{key}, []uint8{level(key)}, []V{v})}
	}
	r, changed := m.root.update(key, v, del)
	if !changed {
		return m
	}
	return Map[V]{root: top(r)}
}

// top returns the root of the tree whose nodes of one height are r: the
// parent nodes made above them until one is left, or the node itself
// with no parent of one kid above it.
func top[V any](r []*mnode[V]) *mnode[V] {
	if len(r) == 0 {
		return nil
	}
	for len(r) > 1 {
		r = split(r[0].height+1, r)
	}
	n := r[0]
	for n.height > 0 {
		n.ensure() // a kid left alone may be a node not read yet
		if len(n.kids) != 1 {
			break
		}
		n = n.kids[0]
	}
	return n
}

// FromSorted returns the map of the entries keys and vals, sorted by key
// without duplicates.
func FromSorted[V any](keys []string, vals []V) Map[V] {
	if len(keys) == 0 {
		return Map[V]{}
	}
	lvls := make([]uint8, len(keys))
	for i, k := range keys {
		lvls[i] = level(k)
	}
	return Map[V]{root: top(splitLeaf(keys, lvls, vals))}
}

func newLeaf[V any](keys []string, lvls []uint8, vals []V) *mnode[V] {
	return &mnode[V]{keys: keys, lvls: lvls, vals: vals, count: len(keys), last: keys[len(keys)-1], lastLvl: lvls[len(lvls)-1]}
}

func newNode[V any](height uint8, kids []*mnode[V]) *mnode[V] {
	n := &mnode[V]{height: height, kids: kids, keys: make([]string, len(kids)), lvls: make([]uint8, len(kids))}
	for i, k := range kids {
		n.keys[i], n.lvls[i] = k.last, k.lastLvl
		n.count += k.count
	}
	n.last, n.lastLvl = n.keys[len(kids)-1], n.lvls[len(kids)-1]
	return n
}

// closed reports whether n ends where its height says a node ends: its
// last key's level is above its height. Only the last node of a height
// may be open.
func (n *mnode[V]) closed() bool { return n.lastLvl > n.height }

// splitLeaf cuts entries into leaves, each ending at a key of level 1 or
// more.
func splitLeaf[V any](keys []string, lvls []uint8, vals []V) []*mnode[V] {
	var out []*mnode[V]
	start := 0
	for i, l := range lvls {
		if l > 0 || i == len(lvls)-1 {
			out = append(out, newLeaf(keys[start:i+1:i+1], lvls[start:i+1:i+1], vals[start:i+1:i+1]))
			start = i + 1
		}
	}
	return out
}

// split cuts nodes of height h-1 into nodes of height h, each ending at
// a node whose last key's level is above h.
func split[V any](h uint8, kids []*mnode[V]) []*mnode[V] {
	var out []*mnode[V]
	start := 0
	for i, k := range kids {
		if k.lastLvl > h || i == len(kids)-1 {
			out = append(out, newNode(h, kids[start:i+1:i+1]))
			start = i + 1
		}
	}
	return out
}

// update returns the nodes of n's height that replace n once key is set
// to v (or removed, del), and whether anything changed.
func (n *mnode[V]) update(key string, v V, del bool) ([]*mnode[V], bool) {
	n.ensure()
	i := sort.SearchStrings(n.keys, key)
	if n.height == 0 {
		found := i < len(n.keys) && n.keys[i] == key
		if del && !found {
			return []*mnode[V]{n}, false
		}
		keys, lvls, vals := slices.Clone(n.keys), slices.Clone(n.lvls), slices.Clone(n.vals)
		switch {
		case del:
			keys, lvls, vals = slices.Delete(keys, i, i+1), slices.Delete(lvls, i, i+1), slices.Delete(vals, i, i+1)
		case found:
			vals[i] = v
		default:
			keys, lvls, vals = slices.Insert(keys, i, key), slices.Insert(lvls, i, level(key)), slices.Insert(vals, i, v)
		}
		if len(keys) == 0 {
			return nil, true
		}
		return splitLeaf(keys, lvls, vals), true
	}
	if i == len(n.kids) {
		i-- // past the last key: into the last kid
	}
	r, changed := n.kids[i].update(key, v, del)
	if !changed {
		return []*mnode[V]{n}, false
	}
	kids := make([]*mnode[V], 0, len(n.kids)+2)
	kids = append(kids, n.kids[:i]...)
	next := n.kids[i+1:]
	if len(r) > 0 && !r[len(r)-1].closed() && len(next) > 0 {
		// The last node lost the key it ended at: it joins the next.
		r = append(r[:len(r)-1:len(r)-1], join(r[len(r)-1], next[0])...)
		next = next[1:]
	}
	kids = append(append(kids, r...), next...)
	if len(kids) == 0 {
		return nil, true
	}
	return split(n.height, kids), true
}

// join returns the nodes of a's height holding the entries of a, which is
// open, and of b, the node after it.
func join[V any](a, b *mnode[V]) []*mnode[V] {
	a.ensure()
	b.ensure()
	if a.height == 0 {
		return splitLeaf(slices.Concat(a.keys, b.keys), slices.Concat(a.lvls, b.lvls), slices.Concat(a.vals, b.vals))
	}
	kids := slices.Clone(a.kids[:len(a.kids)-1])
	last := a.kids[len(a.kids)-1]
	if last.closed() {
		kids = append(append(kids, last), b.kids...)
	} else {
		kids = append(append(kids, join(last, b.kids[0])...), b.kids[1:]...)
	}
	return split(a.height, kids)
}

// Hash returns the hash under which the map is stored: of its one blob up
// to SmallMax entries (none included), else of its tree's root.
func (m Map[V]) Hash(c *Codec[V]) (string, error) {
	switch {
	case m.stored != "":
		return m.stored, nil
	case m.root == nil:
		b, err := c.Leaf(nil, nil)
		if err != nil {
			return "", err
		}
		return Hash(b), nil
	case m.root.count <= SmallMax:
		return m.root.flatHash(c)
	}
	return m.root.nodeHash(c)
}

// flatHash returns the hash of the entries under n as one leaf blob.
func (n *mnode[V]) flatHash(c *Codec[V]) (string, error) {
	n.flatOnce.Do(func() {
		var b []byte
		if b, n.flatErr = n.flatBlob(c); n.flatErr == nil {
			n.flat = Hash(b)
		}
	})
	return n.flat, n.flatErr
}

func (m Map[V]) flatBlob(c *Codec[V]) ([]byte, error) {
	if m.root == nil {
		return c.Leaf(nil, nil)
	}
	return m.root.flatBlob(c)
}

func (n *mnode[V]) flatBlob(c *Codec[V]) ([]byte, error) {
	n.ensure()
	if n.height == 0 {
		return c.Leaf(n.keys, n.vals)
	}
	keys, vals := make([]string, 0, n.count), make([]V, 0, n.count)
	n.all(func(k string, v V) bool {
		keys, vals = append(keys, k), append(vals, v)
		return true
	})
	return c.Leaf(keys, vals)
}

// nodeHash returns the hash of n's blob in the tree, computing it (and
// those of the kids it needs) once.
func (n *mnode[V]) nodeHash(c *Codec[V]) (string, error) {
	if h := n.knownHash(); h != "" {
		return h, nil
	}
	b, err := n.encode(c)
	if err != nil {
		return "", err
	}
	h := Hash(b)
	n.mu.Lock()
	n.hash, n.blob = h, b
	n.mu.Unlock()
	return h, nil
}

// knownHash returns n's hash if it is known, else "".
func (n *mnode[V]) knownHash() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hash
}

// takeBlob returns n's blob, which its hash was computed from, and forgets
// it: a node keeps its blob only until it is stored.
func (n *mnode[V]) takeBlob(c *Codec[V]) ([]byte, error) {
	if _, err := n.nodeHash(c); err != nil {
		return nil, err
	}
	n.mu.Lock()
	b := n.blob
	n.blob = nil
	n.mu.Unlock()
	if b == nil {
		return n.encode(c)
	}
	return b, nil
}

// A node's blob (not a leaf's) is nodeHeader, its height, and for each
// kid its last key's length as a uvarint and the key, the entries under
// it as a uvarint, and its hash's 32 bytes.
var nodeHeader = []byte("wmap1")

func (n *mnode[V]) encode(c *Codec[V]) ([]byte, error) {
	n.ensure()
	if n.height == 0 {
		return c.Leaf(n.keys, n.vals)
	}
	b := make([]byte, 0, len(nodeHeader)+1+len(n.kids)*(48+16))
	b = append(b, nodeHeader...)
	b = append(b, n.height)
	for i, k := range n.kids {
		h, err := k.nodeHash(c)
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(n.keys[i])))
		b = append(b, n.keys[i]...)
		b = binary.AppendUvarint(b, uint64(k.count))
		b, _ = hex.AppendDecode(b, []byte(h))
	}
	return b, nil
}

// nodeRef is a kid as a node's blob names it.
type nodeRef struct {
	last  string
	count int
	hash  string
}

// decodeNode returns the height and kids of a node's blob; ok is false
// when b is not one.
func decodeNode(b []byte) (height uint8, kids []nodeRef, ok bool, err error) {
	height, ok, err = eachKid(b, func(last []byte, count uint64, sum []byte) error {
		r := nodeRef{last: string(last), count: int(count), hash: hex.EncodeToString(sum)}
		if len(kids) > 0 && kids[len(kids)-1].last >= r.last {
			return fmt.Errorf("merkle: map node: keys out of order: %w", errFormat)
		}
		kids = append(kids, r)
		return nil
	})
	if err != nil {
		return 0, nil, ok, err
	}
	return height, kids, ok, nil
}

// eachKid passes to kid the last key, count and SHA-256 sum of each kid
// of a node's blob b, in order, and returns the node's height; ok is
// false when b is not a node. The slices passed are b's own.
func eachKid(b []byte, kid func(last []byte, count uint64, sum []byte) error) (height uint8, ok bool, err error) {
	rest, ok := bytes.CutPrefix(b, nodeHeader)
	if !ok {
		return 0, false, nil
	}
	if len(rest) < 1 || rest[0] == 0 {
		return 0, true, fmt.Errorf("merkle: map node: %w", errFormat)
	}
	height, rest = rest[0], rest[1:]
	kids := 0
	for len(rest) > 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return 0, true, fmt.Errorf("merkle: map node: %w", errFormat)
		}
		last := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		cnt, k := binary.Uvarint(rest)
		if k <= 0 || cnt == 0 || len(rest)-k < 32 {
			return 0, true, fmt.Errorf("merkle: map node: %w", errFormat)
		}
		if err := kid(last, cnt, rest[k:k+32]); err != nil {
			return 0, true, err
		}
		rest = rest[k+32:]
		kids++
	}
	if kids == 0 {
		return 0, true, fmt.Errorf("merkle: map node: no kids: %w", errFormat)
	}
	return height, true, nil
}

// Store passes to put the blobs of m that old, the map as last stored
// (or loaded; nil for none), did not hold, and returns m's hash. Only nodes that are
// not old's (by identity, or by hash where old's is known) are encoded.
func (m Map[V]) Store(old *Map[V], c *Codec[V], put func(hash string, blob []byte)) (string, error) {
	h, err := m.Hash(c)
	if err != nil || m.stored != "" {
		return h, err
	}
	if old == nil {
		old = &Map[V]{}
	} else if oh, _ := old.Hash(c); oh == h {
		return h, nil
	}
	if m.root == nil || m.root.count <= SmallMax {
		b, err := m.flatBlob(c)
		if err != nil {
			return "", err
		}
		put(h, b)
		return h, nil
	}
	var olds []*mnode[V]
	if old.root != nil && old.stored == "" && old.root.count > SmallMax {
		olds = []*mnode[V]{old.root} // its tree was stored
	}
	return h, m.root.putNew(olds, c, put)
}

// putNew puts n and the nodes under it that are not among olds (nodes of
// the stored tree whose keys may overlap n's) or under them.
func (n *mnode[V]) putNew(olds []*mnode[V], c *Codec[V], put func(hash string, blob []byte)) error {
	var err error
	n.fresh("", olds, func(n, o *mnode[V]) bool {
		if err != nil {
			return true
		}
		h, e := n.nodeHash(c)
		if e != nil {
			err = e
			return true
		}
		return o.height == n.height && o.knownHash() == h
	}, func(n *mnode[V]) {
		if err != nil {
			return
		}
		b, e := n.takeBlob(c)
		if e != nil {
			err = e
			return
		}
		put(n.hash, b)
	})
	return err
}

// fresh calls visit with n and every node under it that is not one of
// olds, nodes of another tree whose keys may overlap n's, nor under them:
// a node is skipped when it is one of them, or same says it is the same
// as one (same may be nil).
func (n *mnode[V]) fresh(lo string, olds []*mnode[V], same func(n, o *mnode[V]) bool, visit func(*mnode[V])) {
	hi := n.last
	// Bring olds to n's height, keeping the kids that may overlap n.
	for len(olds) > 0 && olds[0].height > n.height {
		var down []*mnode[V]
		for _, o := range olds {
			o.ensure()
			for j, k := range o.kids {
				if j > 0 && o.keys[j-1] > hi {
					break
				}
				down = append(down, k)
			}
		}
		olds = overlapping(down, lo, hi)
	}
	for _, o := range olds {
		if o == n {
			return
		}
	}
	if same != nil {
		for _, o := range olds {
			if same(n, o) {
				return
			}
		}
	}
	n.ensure()
	visit(n)
	if n.height == 0 {
		return
	}
	var sub []*mnode[V] // the old nodes of the kids' height
	for _, o := range olds {
		if o.height == n.height {
			o.ensure()
			sub = append(sub, o.kids...)
		} else {
			sub = append(sub, o) // olds are lower than n
		}
	}
	for i, k := range n.kids {
		klo := lo
		if i > 0 {
			klo = n.keys[i-1]
		}
		k.fresh(klo, overlapping(sub, klo, k.last), same, visit)
	}
}

// Changed yields the entries of m that may differ from old's (nil: an
// empty map): those of the leaves that m does not share with old, in key
// order. Entries of an unchanged part of the tree are never visited.
func (m Map[V]) Changed(old *Map[V]) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if m.root == nil {
			return
		}
		var olds []*mnode[V]
		if old != nil && old.root != nil {
			olds = []*mnode[V]{old.root}
		}
		stop := false
		m.root.fresh("", olds, nil, func(n *mnode[V]) {
			if stop || n.height > 0 {
				return
			}
			for i, k := range n.keys {
				if !yield(k, n.vals[i]) {
					stop = true
					return
				}
			}
		})
	}
}

// overlapping returns the nodes of olds, sorted by key, that may hold keys
// after lo up to hi: from the first whose last key is after lo to the
// first whose last key is at least hi.
func overlapping[V any](olds []*mnode[V], lo, hi string) []*mnode[V] {
	i := sort.Search(len(olds), func(i int) bool { return olds[i].last > lo })
	j := sort.Search(len(olds), func(i int) bool { return olds[i].last >= hi })
	return olds[i:min(j+1, len(olds))]
}

// Hash returns the name of a blob: the hex SHA-256 of its content.
func Hash(blob []byte) string {
	sum := sha256.Sum256(blob)
	return hex.EncodeToString(sum[:])
}

// errFormat reports a blob that is not of the expected format.
var errFormat = errors.New("malformed blob")

// Kids returns the hashes that b, a blob of a map, names when it is one of
// its nodes (not a leaf), and whether it is one.
func Kids(b []byte) ([]string, bool, error) {
	_, refs, ok, err := decodeNode(b)
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.hash
	}
	return out, ok, err
}

// IsNode reports whether b is, by its header, a blob of a node of a map
// (not a leaf).
func IsNode(b []byte) bool { return bytes.HasPrefix(b, nodeHeader) }

// NodeSums returns the height of b, a blob of a map, and the SHA-256
// sums of the blobs it names, when it is one of its nodes (not a leaf),
// and whether it is one: the kids of a node of height 1 are leaves. It
// reads no more of b than that, and allocates no key.
func NodeSums(b []byte) (height uint8, sums [][32]byte, ok bool, err error) {
	height, ok, err = eachKid(b, func(_ []byte, _ uint64, sum []byte) error {
		sums = append(sums, [32]byte(sum))
		return nil
	})
	if err != nil {
		return 0, nil, ok, err
	}
	return height, sums, ok, nil
}

// errMapFormat reports a blob that is neither a map's node nor its leaf.
var errMapFormat = errors.New("not a map's node nor leaf")

// LoadMap returns the map stored under hash (by Store, or by an older
// build as one leaf blob). It reads the root's blob from get, which checks
// each blob against its hash, and the others on first use (Get, Set, All,
// ...), each then checked against what the node above said of it; a blob
// that cannot be read or is not what it should be then panics with a
// *LoadError, which Recover turns into an error.
func LoadMap[V any](hash string, get func(hash string) ([]byte, error), c *Codec[V]) (Map[V], error) {
	n := &mnode[V]{hash: hash, lazy: &lazy[V]{get: get, c: c, want: -1}}
	if err := n.lazy.fill(n); err != nil {
		return Map[V]{}, err
	}
	n.lazy = nil // read: a root is read at once
	m := Map[V]{root: n}
	if n.count == 0 {
		return Map[V]{}, nil
	}
	if n.height == 0 && n.count > SmallMax {
		// One blob of more than SmallMax entries, as an older build
		// stored every map: it stays stored so until it changes.
		m = FromSorted(n.keys, n.vals)
		m.stored = hash
	} else if n.height == 0 {
		n.flatOnce.Do(func() { n.flat = hash })
	}
	return m, nil
}

// lazy is how a node read from the store reads the rest of itself.
type lazy[V any] struct {
	get   func(hash string) ([]byte, error)
	c     *Codec[V]
	want  int    // its height; -1 for a root, any
	after string // its first key is after this one ("": any)
	once  sync.Once
	err   error
}

// ensure reads the rest of a node read from the store, once, and panics
// with a *LoadError if it cannot.
func (n *mnode[V]) ensure() {
	l := n.lazy
	if l == nil {
		return
	}
	l.once.Do(func() { l.err = l.fill(n) })
	if l.err != nil {
		panic(&LoadError{Err: l.err})
	}
}

// LoadError reports a part of a map that could not be read from the store
// when first used. It is the value of the panic; Recover returns it.
type LoadError struct{ Err error }

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Recover, deferred, turns a panic with a *LoadError into *err; any other
// panic goes on.
func Recover(err *error) {
	if p := recover(); p != nil {
		le, ok := p.(*LoadError)
		if !ok {
			panic(p)
		}
		*err = le
	}
}

// fill reads n's blob and sets n's content from it: a node's kids, as
// nodes that read themselves on first use, or a leaf's entries. It checks
// what the node above said of n: its height, last key and entries.
func (l *lazy[V]) fill(n *mnode[V]) error {
	hash := n.hash
	b, err := l.get(hash)
	if err != nil {
		return err
	}
	height, refs, ok, err := decodeNode(b)
	if err != nil {
		return err
	}
	var keys []string
	if ok {
		kids := make([]*mnode[V], len(refs))
		after := l.after
		for i, r := range refs {
			kids[i] = &mnode[V]{height: height - 1, last: r.last, lastLvl: level(r.last), count: r.count, hash: r.hash,
				lazy: &lazy[V]{get: l.get, c: l.c, want: int(height) - 1, after: after}}
			after = r.last
		}
		nn := newNode(height, kids)
		if err := l.check(n, nn); err != nil {
			return err
		}
		n.keys, n.lvls, n.kids = nn.keys, nn.lvls, nn.kids
	} else {
		var vals []V
		keys, vals, ok, err = l.c.DecodeLeaf(b)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("merkle: %s: %w", hash, errMapFormat)
		case len(keys) == 0 && l.want >= 0:
			return fmt.Errorf("merkle: map leaf %s is empty: %w", hash, errFormat)
		case len(keys) == 0:
			return nil // the empty map
		}
		lvls := make([]uint8, len(keys))
		for i, k := range keys {
			lvls[i] = level(k)
		}
		nn := newLeaf(keys, lvls, vals)
		if err := l.check(n, nn); err != nil {
			return err
		}
		n.keys, n.lvls, n.vals = nn.keys, nn.lvls, nn.vals
	}
	return nil
}

// check compares nn, the node read from n's blob, with what the node above
// said of n, or, for a root, sets n's summary from it.
func (l *lazy[V]) check(n, nn *mnode[V]) error {
	if l.want < 0 {
		n.height, n.count, n.last, n.lastLvl = nn.height, nn.count, nn.last, nn.lastLvl
		return nil
	}
	// A node's first key is its first kid's last, after that kid's
	// first, which is checked when the kid is read.
	first := nn.keys[0]
	switch {
	case int(nn.height) != l.want:
		return fmt.Errorf("merkle: map node %s is of height %d, want %d: %w", n.hash, nn.height, l.want, errFormat)
	case nn.last != n.last || nn.count != n.count:
		return fmt.Errorf("merkle: map node %s does not hold what the node above says: %w", n.hash, errFormat)
	case l.after != "" && first <= l.after:
		return fmt.Errorf("merkle: map node %s: its keys are out of order with its siblings': %w", n.hash, errFormat)
	}
	return nil
}

// Strings is the codec of a Map[string]: a leaf is stringsHeader, then
// each key and value as a uvarint length and its bytes.
var Strings = &Codec[string]{
	Leaf: func(keys, vals []string) ([]byte, error) {
		size := len(stringsHeader)
		for i, k := range keys {
			size += len(k) + len(vals[i]) + 4
		}
		b := make([]byte, 0, size)
		b = append(b, stringsHeader...)
		for i, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = binary.AppendUvarint(b, uint64(len(vals[i])))
			b = append(b, vals[i]...)
		}
		return b, nil
	},
	DecodeLeaf: func(b []byte) ([]string, []string, bool, error) {
		rest, ok := bytes.CutPrefix(b, stringsHeader)
		if !ok {
			return nil, nil, false, nil
		}
		var keys, vals []string
		for len(rest) > 0 {
			var kv [2]string
			for i := range kv {
				n, k := binary.Uvarint(rest)
				if k <= 0 || n > uint64(len(rest)-k) {
					return nil, nil, true, fmt.Errorf("merkle: map leaf: %w", errFormat)
				}
				kv[i], rest = string(rest[k:k+int(n)]), rest[k+int(n):]
			}
			if len(keys) > 0 && keys[len(keys)-1] >= kv[0] {
				return nil, nil, true, fmt.Errorf("merkle: map leaf: keys out of order: %w", errFormat)
			}
			keys, vals = append(keys, kv[0]), append(vals, kv[1])
		}
		return keys, vals, true, nil
	},
}

var stringsHeader = []byte("wstr1")
