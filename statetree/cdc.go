package statetree

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// A STATE slice whose value marshals to more than MaxSliceBlob bytes (a
// large plan, or the read-before-write policy's memory as a former build
// stored it, one JSON object) is stored as a tree: the value cut into chunks where its content says (content-defined
// chunking), lists of the chunks' hashes, and lists of those lists, up to
// one small list at the top. Inserting or changing an entry changes the
// chunk around it and one list on each level, so that storing the change
// writes a few KB whatever the size of the value; chunks of a fixed size
// would all shift after an insertion.
const MaxSliceBlob = 16 << 10

// A value is cut after a byte where a gear hash, which depends on the last
// 64 bytes only, has its top cutBits bits zero, at least minCut and at most
// maxCut bytes after the last cut: about 2.5 KiB on average.
const (
	minCut  = 512
	maxCut  = 16 << 10
	cutBits = 11
)

// A list is cut after a hash whose first two bytes, read as a number, are
// below listCut, and after maxListed hashes: about 24 hashes a list. A
// list of at most maxListed hashes is not cut: it is the top.
const (
	listCut   = 1 << 16 / 24
	maxListed = 64
)

// gear is the gear hash's table: fixed pseudo-random words (splitmix64 from
// a fixed seed), so that the same content is cut at the same places in
// every process.
var gear = func() (t [256]uint64) {
	x := uint64(0x77696e6b2d6d6370) // "wink-mcp"
	for i := range t {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}()

// chunks cuts a value into chunks.
func chunks(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := cut(b)
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// cut returns the length of the first chunk of b.
func cut(b []byte) int {
	if len(b) <= minCut {
		return len(b)
	}
	end := min(len(b), maxCut)
	var h uint64
	for i, c := range b[:end] {
		h = h<<1 + gear[c]
		if i >= minCut && h>>(64-cutBits) == 0 {
			return i + 1
		}
	}
	return end
}

// A list blob is listHeader, its level (0: it lists a value's chunks; n: it
// lists lists of level n-1) and the 32-byte hashes it lists.
var listHeader = []byte("wcdc")

// putSlice stores b, a slice's value larger than MaxSliceBlob, as a tree,
// putting the blobs that are not in old (the blobs of its previous value),
// and returns the top list, which the caller stores, and the hashes of
// the tree's other blobs.
func putSlice(b []byte, old map[string]bool, put Put) ([]byte, map[string]bool) {
	blobs := map[string]bool{}
	store := func(c []byte) []byte {
		h := Hash(c)
		if !old[h] && !blobs[h] {
			put(h, c)
		}
		blobs[h] = true
		sum, _ := hex.DecodeString(h)
		return sum
	}
	var hashes [][]byte
	for _, c := range chunks(b) {
		hashes = append(hashes, store(c))
	}
	for level := byte(0); ; level++ {
		if len(hashes) <= maxListed {
			return list(level, hashes), blobs
		}
		var up [][]byte
		for start, i := 0, 0; i < len(hashes); i++ {
			if i+1 == len(hashes) || i+1-start == maxListed || int(binary.BigEndian.Uint16(hashes[i])) < listCut {
				up = append(up, store(list(level, hashes[start:i+1])))
				start = i + 1
			}
		}
		hashes = up
	}
}

// list returns the blob of a list of level level.
func list(level byte, hashes [][]byte) []byte {
	b := append(bytes.Clone(listHeader), level)
	for _, h := range hashes {
		b = append(b, h...)
	}
	return b
}

// walkSlice reads the tree of a slice whose top list is h, calling list
// with the hash of each list and chunk with each chunk of the value, in
// order.
func walkSlice(h string, get Getter, onList func(h string), onChunk func(h string) error) error {
	b, err := fetch(get, h)
	if err != nil {
		return err
	}
	rest, ok := bytes.CutPrefix(b, listHeader)
	if !ok || len(rest) == 0 || (len(rest)-1)%32 != 0 {
		return fmt.Errorf("%s is not a list of chunks", h)
	}
	onList(h)
	level := rest[0]
	for rest = rest[1:]; len(rest) > 0; rest = rest[32:] {
		c := hex.EncodeToString(rest[:32])
		if level == 0 {
			err = onChunk(c)
		} else {
			err = walkSlice(c, get, onList, onChunk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// getSlice returns the value of a slice whose top list is h, and the hashes
// of the blobs of its tree but the top.
func getSlice(h string, get Getter) ([]byte, map[string]bool, error) {
	var b []byte
	blobs := map[string]bool{}
	err := walkSlice(h, get, func(l string) { blobs[l] = true }, func(c string) error {
		data, err := fetch(get, c)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", c, err)
		}
		b = append(b, data...)
		blobs[c] = true
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	delete(blobs, h)
	return b, blobs, nil
}
