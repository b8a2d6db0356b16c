package statetree

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/merkle"
)

// ChunkSize is the largest file stored as one blob. A larger file is
// stored as chunks of ChunkSize bytes (the last one shorter) and a blob
// listing their hashes, so that every blob stays below store.MaxValue and
// a change to part of a large file rewrites only its chunks.
const ChunkSize = 512 << 10

// Entry is one entry of a directory.
type Entry struct {
	// Name is the entry's name in its directory: not empty, without '/'
	// or NUL.
	Name string
	// Dir says whether it is a directory.
	Dir bool
	// Size is a file's length in bytes; 0 for a directory.
	Size int64
	// Hash names the directory's blob, or the file's: content-addressed
	// (see PutFile), or for a file of at most ChunkSize bytes whose
	// content the session stored as it was written (Stash), located
	// (blobname.Located).
	Hash string
}

// Blob headers: a format tag and version.
var (
	dirHeader    = []byte("wdir1")
	chunksHeader = []byte("wchk1")
)

// EncodeDir returns the blob of a directory. entries must be sorted by
// name, without duplicates. An entry is a kind byte ('d' or 'f'), the
// name's length and the size as uvarints, the name, and the hash's 32
// bytes: about 40 bytes plus the name. A file named by a located name is
// of kind 'l', followed by the sequence as a uvarint; it is at most
// ChunkSize bytes. A directory of no located file is encoded as format 5
// encoded it.
func EncodeDir(entries []Entry) ([]byte, error) {
	b := make([]byte, 0, len(dirHeader)+len(entries)*(48+16))
	b = append(b, dirHeader...)
	for i, e := range entries {
		if err := checkName(e.Name); err != nil {
			return nil, err
		}
		if i > 0 && entries[i-1].Name >= e.Name {
			return nil, fmt.Errorf("statetree: directory entries out of order: %q, %q", entries[i-1].Name, e.Name)
		}
		sum, seq, ok := blobname.Decode(e.Hash)
		if !ok {
			return nil, fmt.Errorf("statetree: entry %q: bad hash %q", e.Name, e.Hash)
		}
		kind := byte('f')
		switch {
		case e.Dir && seq != 0:
			return nil, fmt.Errorf("statetree: entry %q: a directory of located name %q", e.Name, e.Hash)
		case e.Dir:
			kind = 'd'
		case seq != 0 && e.Size > ChunkSize:
			return nil, fmt.Errorf("statetree: entry %q: a located file of %d bytes, more than ChunkSize", e.Name, e.Size)
		case seq != 0:
			kind = 'l'
		}
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(len(e.Name)))
		b = binary.AppendUvarint(b, uint64(e.Size))
		b = append(b, e.Name...)
		b = append(b, sum[:]...)
		if seq != 0 {
			b = binary.AppendUvarint(b, seq)
		}
	}
	return b, nil
}

// errFormat reports a blob that is not of the expected format.
var errFormat = errors.New("malformed blob")

// DecodeDir returns the entries of a directory blob.
func DecodeDir(b []byte) ([]Entry, error) {
	rest, ok := bytes.CutPrefix(b, dirHeader)
	if !ok {
		return nil, fmt.Errorf("statetree: not a directory: %w", errFormat)
	}
	var out []Entry
	for len(rest) > 0 {
		d, err := decodeDirEntry(rest)
		if err != nil {
			return nil, fmt.Errorf("statetree: directory: %w", err)
		}
		e := Entry{Name: string(d.name), Dir: d.kind == 'd', Size: int64(d.size), Hash: hex.EncodeToString(d.sum)}
		if d.seq != 0 {
			e.Hash = blobname.Located(e.Hash, d.seq)
		}
		rest = d.rest
		if err := checkName(e.Name); err != nil || len(out) > 0 && out[len(out)-1].Name >= e.Name {
			return nil, fmt.Errorf("statetree: directory: entry %q: %w", e.Name, errFormat)
		}
		out = append(out, e)
	}
	return out, nil
}

// dirEntry is an entry of a directory blob as it is encoded (EncodeDir),
// its slices in the blob.
type dirEntry struct {
	kind      byte
	name, sum []byte
	size, seq uint64
	rest      []byte // what follows it in the blob
}

// decodeDirEntry decodes the entry at the start of b, the entries of a
// directory blob, checking what its encoding says of each kind: a
// directory has no size, and a located file ('l') a sequence and at most
// ChunkSize bytes. It allocates nothing.
func decodeDirEntry(b []byte) (d dirEntry, err error) {
	d.kind, b = b[0], b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return d, errFormat
	}
	b = b[k:]
	d.size, k = binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return d, errFormat
	}
	b = b[k:]
	if uint64(len(b)) < n+32 {
		return d, errFormat
	}
	d.name, d.sum, d.rest = b[:n], b[n:n+32], b[n+32:]
	switch d.kind {
	case 'f':
	case 'd':
		if d.size != 0 {
			return d, errFormat
		}
	case 'l':
		d.seq, k = binary.Uvarint(d.rest)
		if k <= 0 || d.seq == 0 || d.size > ChunkSize {
			return d, errFormat
		}
		d.rest = d.rest[k:]
	default:
		return d, errFormat
	}
	return d, nil
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("statetree: bad entry name %q", name)
	}
	return nil
}

// PutFile returns the hash under which a file of content data is stored,
// and passes its blobs to put when put is not nil: data itself up to
// ChunkSize bytes, otherwise each chunk and the list of their hashes,
// which the returned hash names. The hash depends only on data.
func PutFile(data []byte, put Put) string {
	if len(data) <= ChunkSize {
		h := Hash(data)
		if put != nil {
			put(h, data)
		}
		return h
	}
	list := make([]byte, 0, len(chunksHeader)+32*(len(data)/ChunkSize+1))
	list = append(list, chunksHeader...)
	for off := 0; off < len(data); off += ChunkSize {
		c := data[off:min(off+ChunkSize, len(data))]
		h := Hash(c)
		if put != nil {
			put(h, c)
		}
		sum, _ := hex.DecodeString(h)
		list = append(list, sum...)
	}
	h := Hash(list)
	if put != nil {
		put(h, list)
	}
	return h
}

// GetFile returns the content of the file of size bytes stored under h
// (see PutFile), or under the located name h, checked against its hash.
func GetFile(h string, size int64, get Getter) ([]byte, error) {
	if size <= ChunkSize {
		return fetch(get, h)
	}
	chunks, err := readChunks(h, size, get)
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, size)
	for _, c := range chunks {
		b, err := fetch(get, c)
		if err != nil {
			return nil, err
		}
		data = append(data, b...)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("statetree: file %s: %d bytes, want %d: %w", h, len(data), size, errFormat)
	}
	return data, nil
}

// FileBlobs returns the names of the blobs of the file of size bytes
// stored under h (see PutFile): h, and its chunks if it has some. A
// located file (h a located name) is its one blob.
func FileBlobs(h string, size int64, get Getter) ([]string, error) {
	if size <= ChunkSize {
		return []string{h}, nil
	}
	chunks, err := readChunks(h, size, get)
	return append(chunks, h), err
}

// readChunks returns the hashes of the chunks of a file of size bytes
// whose chunk list is h.
func readChunks(h string, size int64, get Getter) ([]string, error) {
	b, err := fetch(get, h)
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(b, chunksHeader)
	want := (size + ChunkSize - 1) / ChunkSize
	if !ok || int64(len(rest)) != 32*want {
		return nil, fmt.Errorf("statetree: chunk list %s: %w", h, errFormat)
	}
	out := make([]string, 0, want)
	for ; len(rest) > 0; rest = rest[32:] {
		out = append(out, hex.EncodeToString(rest[:32]))
	}
	return out, nil
}

// The root document (State.Doc) is docHeader, then one entry per slice
// and tree, sorted by kind, then name: the kind byte, the name's length as
// a uvarint and the name, then an inline slice's length as a uvarint and
// its bytes, or the 32 bytes of the hash of a blob, a chunked slice's top
// list, a slice its codec stores as blobs of its own (session.Codec.Store:
// a merkle.Map) or a tree's root directory.
var docHeader = []byte("wdoc1")

// The kinds of entries of a root document.
const (
	kindInline  byte = 'i'
	kindBlob    byte = 's'
	kindChunked byte = 'c'
	kindTree    byte = 't'
	kindOwn     byte = 'm'
)

// docEntry is one entry of a root document.
type docEntry struct {
	kind byte
	name string
	data []byte // an inline slice's
	hash string // the others'
}

// encodeDoc returns the root document of st.
func (st *State) encodeDoc() []byte {
	entries := make([]docEntry, 0, len(st.slices)+len(st.trees))
	size := len(docHeader)
	for name, ref := range st.slices {
		e := docEntry{kind: kindInline, name: name, data: ref.inline, hash: ref.hash}
		switch {
		case ref.own:
			e.kind = kindOwn
		case ref.chunks != nil:
			e.kind = kindChunked
		case ref.inline == nil:
			e.kind = kindBlob
		}
		entries = append(entries, e)
		size += len(name) + len(ref.inline) + 48
	}
	for name, m := range st.trees {
		entries = append(entries, docEntry{kind: kindTree, name: name, hash: m.hash})
		size += len(name) + 48
	}
	slices.SortFunc(entries, func(a, b docEntry) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.name, b.name))
	})
	b := make([]byte, 0, size)
	b = append(b, docHeader...)
	for _, e := range entries {
		b = append(b, e.kind)
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		if e.kind == kindInline {
			b = binary.AppendUvarint(b, uint64(len(e.data)))
			b = append(b, e.data...)
			continue
		}
		sum, _ := hex.DecodeString(e.hash) // a Hash
		b = append(b, sum...)
	}
	return b
}

// decodeDoc returns the entries of a root document.
func decodeDoc(b []byte) ([]docEntry, error) {
	rest, ok := bytes.CutPrefix(b, docHeader)
	if !ok {
		return nil, fmt.Errorf("statetree: not a root document: %w", errFormat)
	}
	var out []docEntry
	for len(rest) > 0 {
		e := docEntry{kind: rest[0]}
		n, k := binary.Uvarint(rest[1:])
		if k <= 0 || n > uint64(len(rest)-1-k) {
			return nil, fmt.Errorf("statetree: root document: %w", errFormat)
		}
		rest = rest[1+k:]
		e.name, rest = string(rest[:n]), rest[n:]
		switch e.kind {
		case kindInline:
			n, k := binary.Uvarint(rest)
			if k <= 0 || n > uint64(len(rest)-k) {
				return nil, fmt.Errorf("statetree: root document: slice %q: %w", e.name, errFormat)
			}
			e.data, rest = rest[k:k+int(n)], rest[k+int(n):]
		case kindBlob, kindChunked, kindTree, kindOwn:
			if len(rest) < 32 {
				return nil, fmt.Errorf("statetree: root document: %q: %w", e.name, errFormat)
			}
			e.hash, rest = hex.EncodeToString(rest[:32]), rest[32:]
		default:
			return nil, fmt.Errorf("statetree: root document: entry %q of kind %q: %w", e.name, e.kind, errFormat)
		}
		out = append(out, e)
	}
	return out, nil
}

// DirCodec returns the codec of a directory kept as a merkle.Map[V]: its
// leaves are directory blobs (EncodeDir), so that a directory of up to
// merkle.SmallMax entries is one such blob, as this format always stored
// it, and a larger one a tree of them. entry describes a value (its Name
// is ignored, its Hash may be a located name); value makes the value of
// an entry read back, whose Hash is a located name where the entry was
// stored as one.
func DirCodec[V any](entry func(V) (Entry, error), value func(Entry) (V, error)) *merkle.Codec[V] {
	return &merkle.Codec[V]{
		Leaf: func(names []string, vals []V) ([]byte, error) {
			entries := make([]Entry, len(names))
			for i, v := range vals {
				e, err := entry(v)
				if err != nil {
					return nil, err
				}
				e.Name = names[i]
				entries[i] = e
			}
			return EncodeDir(entries)
		},
		DecodeLeaf: func(b []byte) ([]string, []V, bool, error) {
			if !bytes.HasPrefix(b, dirHeader) {
				return nil, nil, false, nil
			}
			entries, err := DecodeDir(b)
			if err != nil {
				return nil, nil, true, err
			}
			names, vals := make([]string, len(entries)), make([]V, len(entries))
			for i, e := range entries {
				if vals[i], err = value(e); err != nil {
					return nil, nil, true, err
				}
				names[i] = e.Name
			}
			return names, vals, true, nil
		},
	}
}
