package sessions

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// A record in the history's tail is binary, and written against the
// record before it in the tail, so that the head a commit writes grows by
// little more than what the call's id does not share with the id before
// it: a flag byte; the record's number, unless it follows that of the
// record before (recNextSeq); the call's id (its length, a uvarint, then
// its bytes), or, when it starts as the id of the record before does
// (recSharedID: ids of one process share a prefix), the length of what
// they share and then the rest the same way; the tool's name the same
// way as the id, unless it is that of the record before (recSameTool); the
// time, in nanoseconds since the record before's (a varint; since the
// Unix epoch for the first); the 32 bytes of the state it goes back to,
// when the tail's documents do not name it (recPrev); the 32 bytes of its
// root, when no document is beside it (recRoot: a history's blob whose
// record names a state whose document is a blob of its own); and, when
// the record names STATE slices or files (recExtra), their JSON, to the
// end. Its root is otherwise the hash of the document beside it
// (appendTail).
const (
	recPrev     = 1 << 0
	recSameTool = 1 << 1
	recExtra    = 1 << 2
	recRestores = 1 << 3
	recUndone   = 1 << 4
	recRoot     = 1 << 5
	recNextSeq  = 1 << 6
	recSharedID = 1 << 7
)

// recordExtra is what a tail's record holds as JSON: what only some
// records have.
type recordExtra struct {
	State []string              `json:"state,omitempty"`
	Files []session.HistoryFile `json:"files,omitempty"`
}

// appendRecord returns b with the record c as a tail holds it, after
// before, the record before it in the tail (nil for none), with the state
// it goes back to when withPrev is set, and its root when withRoot is. A
// state it names is a hash (errNotHash).
func appendRecord(b []byte, c *session.HistoryCommit, before *session.HistoryCommit, withPrev, withRoot bool) ([]byte, error) {
	var flags byte
	var prev, root [32]byte
	if withPrev {
		if !decodeHash(prev[:], c.Prev) {
			return nil, fmt.Errorf("a history record going back to %q: %w", c.Prev, errNotHash)
		}
		flags |= recPrev
	}
	if withRoot {
		if !decodeHash(root[:], c.Root) {
			return nil, fmt.Errorf("a history record reaching %q: %w", c.Root, errNotHash)
		}
		flags |= recRoot
	}
	sameTool := before != nil && before.Tool == c.Tool
	if sameTool {
		flags |= recSameTool
	}
	extra := len(c.State) > 0 || len(c.Files) > 0
	if extra {
		flags |= recExtra
	}
	if c.Restores {
		flags |= recRestores
	}
	if c.Undone {
		flags |= recUndone
	}
	nextSeq := before != nil && c.Seq == before.Seq+1
	if nextSeq {
		flags |= recNextSeq
	}
	shared := 0
	if before != nil {
		shared = commonPrefix([]byte(before.CallID), []byte(c.CallID))
	}
	if shared > 0 {
		flags |= recSharedID
	}
	b = append(b, flags)
	if !nextSeq {
		b = binary.AppendUvarint(b, c.Seq)
	}
	if shared > 0 {
		b = binary.AppendUvarint(b, uint64(shared))
	}
	b = binary.AppendUvarint(b, uint64(len(c.CallID)-shared))
	b = append(b, c.CallID[shared:]...)
	if !sameTool {
		b = binary.AppendUvarint(b, uint64(len(c.Tool)))
		b = append(b, c.Tool...)
	}
	t := c.Time.UnixNano()
	if before != nil {
		t -= before.Time.UnixNano()
	}
	b = binary.AppendVarint(b, t)
	if withPrev {
		b = append(b, prev[:]...)
	}
	if withRoot {
		b = append(b, root[:]...)
	}
	if extra {
		j, err := json.Marshal(recordExtra{State: c.State, Files: c.Files})
		if err != nil {
			return nil, err
		}
		b = append(b, j...)
	}
	return b, nil
}

// errNotHash is the error of a history record that names a state by
// something other than a hash, which a tail cannot hold.
var errNotHash = errors.New("not a hash")

// decodeHash decodes h, the hex of a hash, into dst, and reports whether
// it is one.
func decodeHash(dst []byte, h string) bool {
	if len(h) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst, []byte(h))
	return err == nil
}

// readRecord returns the record rec of a tail, after before, the record
// before it in the tail (nil for none). Its root unless it names it, and
// the state it goes back to unless it names it, are left to the caller
// (readTail).
func readRecord(rec []byte, before *session.HistoryCommit) (session.HistoryCommit, error) {
	var c session.HistoryCommit
	r := tailReader(rec)
	if len(r) == 0 {
		return c, errBadTail
	}
	flags := r[0]
	r = r[1:]
	if flags&(recNextSeq|recSharedID|recSameTool) != 0 && before == nil {
		return c, errBadTail
	}
	var err error
	if flags&recNextSeq != 0 {
		c.Seq = before.Seq + 1
	} else if c.Seq, err = r.uvarint(); err != nil {
		return c, err
	}
	var shared uint64
	if flags&recSharedID != 0 {
		if shared, err = r.uvarint(); err != nil || shared == 0 || shared > uint64(len(before.CallID)) {
			return c, errBadTail
		}
	}
	id, err := r.bytes()
	if err != nil {
		return c, err
	}
	c.CallID = string(id)
	if shared > 0 {
		c.CallID = before.CallID[:shared] + c.CallID
	}
	switch {
	case flags&recSameTool == 0:
		tool, err := r.bytes()
		if err != nil {
			return c, err
		}
		c.Tool = string(tool)
	case before == nil:
		return c, errBadTail
	default:
		c.Tool = before.Tool
	}
	t, k := binary.Varint(r)
	if k <= 0 {
		return c, errBadTail
	}
	r = r[k:]
	if before != nil {
		t += before.Time.UnixNano()
	}
	c.Time = time.Unix(0, t)
	if flags&recPrev != 0 {
		if len(r) < 32 {
			return c, errBadTail
		}
		c.Prev, r = hex.EncodeToString(r[:32]), r[32:]
	}
	if flags&recRoot != 0 {
		if len(r) < 32 {
			return c, errBadTail
		}
		c.Root, r = hex.EncodeToString(r[:32]), r[32:]
	}
	c.Restores, c.Undone = flags&recRestores != 0, flags&recUndone != 0
	if flags&recExtra != 0 {
		var x recordExtra
		if err := json.Unmarshal(r, &x); err != nil {
			return c, fmt.Errorf("%w: %v", errBadTail, err)
		}
		c.State, c.Files = x.State, x.Files
	} else if len(r) > 0 {
		return c, errBadTail
	}
	return c, nil
}
