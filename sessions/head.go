package sessions

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// head is a session's head record in the store: the principal the session
// is bound to, the hash of its history's blob ("" for none), the history's
// tail (tail.go: the records since that blob, with their states' root
// documents), and its state's root document (statetree.State.Doc; nil
// while the session holds what it started with). Small state travels in
// the document, so that a commit that changes only it (a plan) writes the
// head and nothing else, its record for undo included.
type head struct {
	Owner   string
	History string
	Tail    []byte
	Doc     []byte
}

// headMagic starts a head record; a flag byte follows, then the owner's
// length (a uvarint) and the owner, the history's 32 bytes when the flag
// says so, and the document, to the end. A head with a tail starts with
// headMagicTail instead, so that a build that knows no tail, or an older
// form of it, refuses it rather than reading the tail as the document;
// the tail's length (a uvarint) and the tail come before the document.
// A head of format 3 with a tail starts with headMagicPlainTail: its
// tail's entries hold their documents whole (plainTail), and it is read
// as the tail it would be today.
var (
	headMagic          = []byte("whd1")
	headMagicPlainTail = []byte("whd2")
	headMagicTail      = []byte("whd3")
)

const (
	headHasHistory = 1
	headHasTail    = 2
)

// errBadHead is the error of a head record that does not parse.
var errBadHead = errors.New("malformed head record")

// marshal returns the head record h. The document of the tail's first
// entry, which the tail holds whole, is written as what it changed of the
// head's document: the state a commit reached differs little from the
// state the commits since the history's blob started from.
func (h head) marshal() []byte {
	// The tail's first entry, its document whole, and the rest.
	var rec, doc, rest []byte
	var first [64]byte
	var firstDoc []byte // the first entry's document written against h.Doc
	n := len(h.Tail)
	if n > 0 {
		var err error
		if rec, doc, rest, err = firstEntry(h.Tail); err == nil {
			firstDoc = appendDoc(first[:0], h.Doc, doc)
			n = uvarintLen(len(rec)) + len(rec) + len(firstDoc) + len(rest)
		} // else a tail this process did not write: as it is, for the reader to refuse
	}
	b := make([]byte, 0, len(headMagic)+1+binary.MaxVarintLen16+len(h.Owner)+32+binary.MaxVarintLen32+n+len(h.Doc))
	var flags byte
	if len(h.Tail) > 0 {
		b = append(b, headMagicTail...)
		flags |= headHasTail
	} else {
		b = append(b, headMagic...)
	}
	if h.History != "" {
		flags |= headHasHistory
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(h.Owner)))
	b = append(b, h.Owner...)
	if h.History != "" {
		sum, _ := hex.DecodeString(h.History) // a hash
		b = append(b, sum...)
	}
	switch {
	case firstDoc != nil:
		b = binary.AppendUvarint(b, uint64(n))
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
		b = append(b, firstDoc...)
		b = append(b, rest...)
	case n > 0:
		b = binary.AppendUvarint(b, uint64(n))
		b = append(b, h.Tail...)
	}
	return append(b, h.Doc...)
}

// uvarintLen returns the length of n as a uvarint.
func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return len(binary.AppendUvarint(b[:0], uint64(n)))
}

// parseHead returns the head record b.
func parseHead(b []byte) (head, error) {
	var h head
	rest, ok := bytes.CutPrefix(b, headMagic)
	tail, plain := false, false
	if !ok {
		rest, tail = bytes.CutPrefix(b, headMagicTail)
	}
	if !ok && !tail {
		rest, plain = bytes.CutPrefix(b, headMagicPlainTail)
		tail = plain
	}
	if !ok && !tail || len(rest) == 0 {
		return h, errBadHead
	}
	flags := rest[0]
	if tail != (flags&headHasTail != 0) {
		return h, errBadHead
	}
	n, k := binary.Uvarint(rest[1:])
	if k <= 0 || n > uint64(len(rest)-1-k) {
		return h, errBadHead
	}
	rest = rest[1+k:]
	h.Owner, rest = string(rest[:n]), rest[n:]
	if flags&headHasHistory != 0 {
		if len(rest) < 32 {
			return h, errBadHead
		}
		h.History, rest = hex.EncodeToString(rest[:32]), rest[32:]
	}
	if tail {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n == 0 || n > uint64(len(rest)-k) {
			return h, errBadHead
		}
		h.Tail, rest = rest[k:k+int(n):k+int(n)], rest[k+int(n):]
		if plain {
			var err error
			if h.Tail, err = plainTail(h.Tail); err != nil {
				return h, fmt.Errorf("%w: %w", errBadHead, err)
			}
		}
	}
	if len(rest) > 0 {
		h.Doc = rest
	}
	if tail && !plain {
		var err error
		if h.Tail, err = rebaseTail(h.Tail, h.Doc, nil); err != nil {
			return h, fmt.Errorf("%w: %w", errBadHead, err)
		}
	}
	return h, nil
}

// readHead parses the head record of session name as the store holds it.
func readHead(name string, b []byte) (head, error) {
	h, err := parseHead(b)
	if err != nil {
		return h, fmt.Errorf("session %s: reading its head: %w", name, err)
	}
	return h, nil
}
