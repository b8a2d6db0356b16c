// Package blobname says how a session's blobs are named. A blob is named
// by the hex SHA-256 of its content ("content-addressed"), which the store
// finds it by, or, for a file's content stored in the order it was written
// (store.Store.PutData), by that hash and the store's sequence of the
// message that holds it ("located"): HASH@SEQ. Both forms carry the hash,
// so whoever reads a blob checks it against its content either way.
package blobname

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Located returns the name of the blob of content hash hash stored at
// sequence seq.
func Located(hash string, seq uint64) string {
	return hash + "@" + strconv.FormatUint(seq, 10)
}

// Split returns the hash of a blob's name, and the sequence it is stored
// at for a located name (0 for a content-addressed one). ok is false for
// a string that is not a blob's name.
func Split(name string) (hash string, seq uint64, ok bool) {
	if len(name) < hexLen || !validHash(name[:hexLen]) {
		return "", 0, false
	}
	if seq, ok = splitSeq(name[hexLen:]); !ok {
		return "", 0, false
	}
	return name[:hexLen], seq, true
}

// Decode returns the SHA-256 a blob's name holds, and the sequence it is
// stored at for a located name (0 for a content-addressed one), without
// allocating: a directory's entries are named so, and a directory is
// encoded whenever one of them changes. ok is false for a string that is
// not a blob's name.
func Decode(name string) (sum [sha256.Size]byte, seq uint64, ok bool) {
	if len(name) < hexLen {
		return sum, 0, false
	}
	for i := range sum {
		hi, lo := unhex[name[2*i]], unhex[name[2*i+1]]
		if hi|lo > 0xf {
			return [sha256.Size]byte{}, 0, false
		}
		sum[i] = hi<<4 | lo
	}
	if seq, ok = splitSeq(name[hexLen:]); !ok {
		return [sha256.Size]byte{}, 0, false
	}
	return sum, seq, true
}

// hexLen is the length of a hash's hex.
const hexLen = 2 * sha256.Size

// splitSeq returns the sequence that at, what follows the hash in a
// blob's name, gives: none (0) when at is empty, or "@" and a sequence
// of at least 1 in decimal without leading zeros.
func splitSeq(at string) (seq uint64, ok bool) {
	if at == "" {
		return 0, true
	}
	if len(at) < 2 || at[0] != '@' || at[1] == '0' {
		return 0, false
	}
	seq, err := strconv.ParseUint(at[1:], 10, 64)
	return seq, err == nil
}

// validHash reports whether h is a hex SHA-256 in lower case.
func validHash(h string) bool {
	if len(h) != hexLen {
		return false
	}
	for i := 0; i < len(h); i++ {
		if unhex[h[i]] > 0xf {
			return false
		}
	}
	return true
}

// unhex is the value of each lower-case hex digit, and 0xff for every
// other byte.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

// Hash returns the content-addressed name of content: its hex SHA-256.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
