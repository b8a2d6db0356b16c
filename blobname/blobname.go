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
	"strings"
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
	hash, at, located := strings.Cut(name, "@")
	if !validHash(hash) {
		return "", 0, false
	}
	if !located {
		return hash, 0, true
	}
	seq, err := strconv.ParseUint(at, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != at {
		return "", 0, false
	}
	return hash, seq, true
}

// validHash reports whether h is a hex SHA-256 in lower case.
func validHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Hash returns the content-addressed name of content: its hex SHA-256.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
