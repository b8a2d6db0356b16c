package statetree

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/merkle"
)

// Index counts the references to every blob that a set of roots uses (a
// session's state, and what its history keeps), so that when the roots
// change, the blobs no longer used are known from what changed: Update
// reads the blobs it did not hold (those the new roots reach through
// parts the old did not share) and lets go of what only the old roots
// held, without a walk of the parts both share. A blob is counted once
// per blob (or root) that names it, and as what it is named as (a
// directory, a file, ...), which says what it names in turn, so a blob
// that many parts share (the same file at two paths, an empty directory)
// goes only with the last of them.
//
// An Index holds a hash (and a located file's sequence) and the list of
// what it names for each blob in use: for a session of 100,000 files,
// about 12 MB (BenchmarkIndexWhole), with no pointers for the collector
// to follow. It is not safe for concurrent use. After Update
// fails it is unusable, and must be dropped.
type Index struct {
	nodes map[ref]inode
	// kids holds what each blob names, at the inode's place; free counts
	// those of blobs dropped, which a compaction drops from kids too.
	kids  pages
	free  int
	roots []ref
	reads int
	// scratch is read's buffer, reused: add places what read returns
	// in kids before it reads another blob.
	scratch []ref
}

// pages hold the refs that the blobs of an Index name, each blob's
// together in one page: a page is never moved nor grown past the
// capacity it was made with, so that placing more costs no copy of what
// is placed (the blobs of 100,000 files name about as many refs, 4 MB),
// nor a new place for a blob's refs being walked.
type pages struct {
	p    [][]ref
	refs int // placed, dropped or not
}

// pageBits sets the refs a page holds: 4,096, 160 KiB. A blob that names
// more has a page of its own.
const pageBits = 12

// place places refs in the last page, or a new one if it has no room,
// and returns their place.
func (ps *pages) place(refs []ref) uint32 {
	last := len(ps.p) - 1
	if last < 0 || len(ps.p[last])+len(refs) > cap(ps.p[last]) {
		ps.p = append(ps.p, make([]ref, 0, max(1<<pageBits, len(refs))))
		last++
	}
	at := uint32(last)<<pageBits | uint32(len(ps.p[last]))
	ps.p[last] = append(ps.p[last], refs...)
	ps.refs += len(refs)
	return at
}

// of returns what the blob n names.
func (ps *pages) of(n inode) []ref {
	if n.nkid == 0 {
		return nil
	}
	i := n.off & (1<<pageBits - 1)
	return ps.p[n.off>>pageBits][i : i+n.nkid]
}

// ref is a blob as something names it: its hash, what it is, and for a
// located file (always of kind refBlob) its sequence. It is 40 bytes, of
// no pointers.
type ref struct {
	sum  [32]byte
	kind byte
	// seq is a located file's sequence, little-endian: a blob of its own,
	// distinct from the content-addressed blob of the same hash and from
	// one located at another sequence. Zero for a content-addressed blob.
	seq [7]byte
}

// maxSeq is the largest sequence a ref holds.
const maxSeq = 1<<56 - 1

// setSeq makes r the blob located at sequence seq, and reports whether
// seq fits.
func (r *ref) setSeq(seq uint64) bool {
	if seq > maxSeq {
		return false
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	r.seq = [7]byte(b[:7])
	return true
}

// name returns the name of the blob r: its hash, or its located name.
func (r ref) name() string {
	h := hex.EncodeToString(r.sum[:])
	if r.seq == ([7]byte{}) {
		return h
	}
	var b [8]byte
	copy(b[:], r.seq[:])
	return blobname.Located(h, binary.LittleEndian.Uint64(b[:]))
}

// parseRef returns the ref of kind kind of the blob named name, and
// reports whether name was a blob's name (of kind refBlob when located).
func parseRef(name string, kind byte) (r ref, ok bool) {
	r.kind = kind
	var seq uint64
	r.sum, seq, ok = blobname.Decode(name)
	if ok && seq != 0 {
		ok = kind == refBlob && r.setSeq(seq)
	}
	return r, ok
}

// inode is a blob in use: how many blobs (and roots) name it, and where
// in Index.kids what it names is: the page (off >> pageBits) and the
// place in it.
type inode struct {
	n         int32
	off, nkid uint32
}

// The kinds of refs: what a blob is named as says what it names.
const (
	refBlob   byte = 'b' // names nothing: a file, a chunk, a slice, a map's leaf
	refDoc    byte = 'r' // a root document
	refList   byte = 'c' // a list of a chunked slice's chunks (or lists)
	refDir    byte = 'd' // a directory blob, or a node of a large directory's tree
	refMap    byte = 'm' // a node (or leaf) of a slice stored as a merkle.Map
	refChunks byte = 'f' // a file's list of chunks
)

// docKinds are the kinds of refs that a root document's entries make,
// by the entries' kinds (an inline slice names nothing).
var docKinds = map[byte]byte{kindBlob: refBlob, kindChunked: refList, kindTree: refDir, kindOwn: refMap}

// refKinds are all the kinds, for Has.
var refKinds = []byte{refBlob, refDoc, refList, refDir, refMap, refChunks}

// Root is a root of an Index: a blob that something outside the tree
// keeps (a head, a history).
type Root struct {
	hash string
	kind byte
}

// DocRoot is the root document stored under hash, and everything it
// uses.
func DocRoot(hash string) Root { return Root{hash, refDoc} }

// BlobRoot is the blob hash alone, such as a history's, whatever it
// holds; hash may be a located name.
func BlobRoot(hash string) Root { return Root{hash, refBlob} }

// FileRoot is the file of size bytes stored under hash (see PutFile), or
// under the located name hash: its blob, and its chunks if it has some.
func FileRoot(hash string, size int64) Root {
	if size > ChunkSize {
		return Root{hash, refChunks}
	}
	return Root{hash, refBlob}
}

// NewIndex returns an empty Index, of no roots.
func NewIndex() *Index { return &Index{nodes: map[ref]inode{}} }

// Len returns the number of blobs in use.
func (x *Index) Len() int { return len(x.nodes) }

// Reads returns the number of blobs the index has read through its
// Getters.
func (x *Index) Reads() int { return x.reads }

// Has reports whether the blob named name is in use: a
// content-addressed blob of that hash, whatever it is used as, or the
// blob of that located name.
func (x *Index) Has(name string) bool {
	r, ok := parseRef(name, refBlob)
	return ok && x.has(r)
}

// has reports whether the blob r is in use, as whatever it is used as.
func (x *Index) has(r ref) bool {
	if r.seq != ([7]byte{}) {
		_, ok := x.nodes[r]
		return ok // a located file, always of kind refBlob
	}
	for _, k := range refKinds {
		r.kind = k
		if _, ok := x.nodes[r]; ok {
			return true
		}
	}
	return false
}

// Update makes roots the index's roots in place of those of the last
// Update, and returns the names of the blobs that only those used. It
// reads with get (which must check each blob against its hash, as
// Decode's Getter) every blob that roots use and the index did not
// hold, and no other. A root may be named more than once.
func (x *Index) Update(roots []Root, get Getter) (dead []string, err error) {
	next := make([]ref, len(roots))
	for i, r := range roots {
		var ok bool
		if next[i], ok = parseRef(r.hash, r.kind); !ok {
			return nil, fmt.Errorf("statetree: index: root %q: %w", r.hash, errFormat)
		}
	}
	for _, r := range next {
		if err := x.add(r, get); err != nil {
			return nil, err
		}
	}
	var gone []ref
	for _, r := range x.roots {
		gone = x.release(r, gone)
	}
	x.roots = next
	if x.free > 1024 && x.free > x.kids.refs/2 {
		x.compact()
	}
	seen := map[ref]bool{} // by blob, whatever it was named as
	for _, r := range gone {
		b := r
		b.kind = 0
		if seen[b] {
			continue
		}
		seen[b] = true
		if !x.has(r) {
			dead = append(dead, r.name())
		}
	}
	return dead, nil
}

// add counts one more reference to r, and when it is new, reads it and
// adds what it names.
func (x *Index) add(r ref, get Getter) error {
	if n, ok := x.nodes[r]; ok {
		n.n++
		x.nodes[r] = n
		return nil
	}
	kids, err := x.read(r, get)
	if err != nil {
		return err
	}
	n := inode{n: 1, nkid: uint32(len(kids))}
	if len(kids) > 0 { // what names nothing has no place in kids
		n.off = x.kids.place(kids)
	}
	x.nodes[r] = n
	for _, k := range x.kids.of(n) {
		if err := x.add(k, get); err != nil {
			return err
		}
	}
	return nil
}

// release counts one reference to r less, and when it was the last,
// drops r and releases what it names; it returns gone with every blob
// dropped appended.
func (x *Index) release(r ref, gone []ref) []ref {
	n, ok := x.nodes[r]
	if !ok {
		return gone
	}
	if n.n--; n.n > 0 {
		x.nodes[r] = n
		return gone
	}
	delete(x.nodes, r)
	gone = append(gone, r)
	if n.nkid == 0 {
		return gone
	}
	x.free += int(n.nkid)
	for _, k := range x.kids.of(n) {
		gone = x.release(k, gone)
	}
	return gone
}

// compact drops from kids what dropped blobs named.
func (x *Index) compact() {
	var kids pages
	for r, n := range x.nodes {
		if n.nkid == 0 {
			continue
		}
		old := x.kids.of(n)
		n.off = kids.place(old)
		x.nodes[r] = n
	}
	x.kids, x.free = kids, 0
}

// read returns what the blob r names, reading it unless its kind names
// nothing.
func (x *Index) read(r ref, get Getter) ([]ref, error) {
	if r.kind == refBlob {
		return nil, nil
	}
	h := hex.EncodeToString(r.sum[:])
	b, err := fetch(get, h)
	x.reads++
	if err != nil {
		return nil, fmt.Errorf("statetree: index: %s: %w", h, err)
	}
	out := x.scratch[:0]
	add := func(kind byte, h string) bool {
		sum, seq, ok := blobname.Decode(h)
		out = append(out, ref{kind: kind, sum: sum})
		return ok && seq == 0
	}
	bad := func(what string) error { return fmt.Errorf("statetree: index: %s %s: %w", what, h, errFormat) }
	switch r.kind {
	case refDoc:
		entries, err := decodeDoc(b)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			kind := docKinds[e.kind]
			if kind != 0 && !add(kind, e.hash) {
				return nil, bad("root document")
			}
		}
	case refList:
		rest, ok := bytes.CutPrefix(b, listHeader)
		if !ok || len(rest) == 0 || (len(rest)-1)%32 != 0 {
			return nil, bad("list of chunks")
		}
		kind := refList
		if rest[0] == 0 {
			kind = refBlob
		}
		for rest = rest[1:]; len(rest) > 0; rest = rest[32:] {
			out = append(out, ref{kind: kind, sum: [32]byte(rest[:32])})
		}
	case refChunks:
		rest, ok := bytes.CutPrefix(b, chunksHeader)
		if !ok || len(rest)%32 != 0 {
			return nil, bad("file's chunk list")
		}
		for ; len(rest) > 0; rest = rest[32:] {
			out = append(out, ref{kind: refBlob, sum: [32]byte(rest[:32])})
		}
	case refMap, refDir:
		height, sums, ok, err := merkle.NodeSums(b)
		if err != nil {
			return nil, err
		}
		if ok {
			// A node of a map's tree: the kids of one of height 1
			// are leaves, which for a slice's map name nothing.
			kind := r.kind
			if kind == refMap && height == 1 {
				kind = refBlob
			}
			for _, sum := range sums {
				out = append(out, ref{kind: kind, sum: sum})
			}
			break
		}
		if r.kind == refMap {
			break // a leaf
		}
		if out, err = dirRefs(b, out); err != nil {
			return nil, fmt.Errorf("statetree: index: directory %s: %w", h, err)
		}
	}
	x.scratch = out[:0]
	return out, nil
}

// dirRefs returns out with what the directory blob b names appended (see
// EncodeDir): a directory, a file's chunk list, a file, or a located file.
// It allocates no name.
func dirRefs(b []byte, out []ref) ([]ref, error) {
	rest, ok := bytes.CutPrefix(b, dirHeader)
	if !ok {
		return nil, fmt.Errorf("not a directory: %w", errFormat)
	}
	for len(rest) > 0 {
		d, err := decodeDirEntry(rest)
		if err != nil {
			return nil, err
		}
		r := ref{kind: refBlob, sum: [32]byte(d.sum)}
		switch {
		case d.kind == 'd':
			r.kind = refDir
		case d.seq != 0:
			if !r.setSeq(d.seq) {
				return nil, errFormat
			}
		case d.size > ChunkSize:
			r.kind = refChunks
		}
		out = append(out, r)
		rest = d.rest
	}
	return out, nil
}

// Names reports whether b may be a blob that names others, which an
// Index reads when it is new: a root document, a directory, a node of a
// map's tree, a list of chunks. Others (a file, a chunk, a map's leaf)
// it never reads, so a caller that keeps what it wrote for an Index to
// read may keep only those.
func Names(b []byte) bool {
	return bytes.HasPrefix(b, docHeader) || bytes.HasPrefix(b, dirHeader) || merkle.IsNode(b) ||
		bytes.HasPrefix(b, listHeader) || bytes.HasPrefix(b, chunksHeader)
}
