package sessions

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
)

// A session's history: with Options.History above zero, every commit of a
// session appends a record of the call that made it to a history kept in
// the store beside the session's state, one blob that the session's head
// names. A record holds the roots of the state before and after the call
// (so that the state can be put back as it was), the STATE slices and the
// files it changed, and, for a file outside the stored state (a disk
// workspace), the blobs of its content before and after the call (so that
// it can be put back, and a change made outside the server since be seen).
// The history keeps the last Options.History records and as many named
// checkpoints; the blob sweep keeps every blob they use. The history
// section's tools (historySection) undo calls and restore checkpoints, as
// calls of their own: they put the state and the files back inside their
// transaction, which commits or restores like any other.

// historyDoc is a session's history, as stored.
type historyDoc = session.HistoryLog

// dirToken stands for a directory where a session.HistoryFile holds a blob's hash.
const dirToken = "dir"

// token is what a session.HistoryFile holds for the content data (exists), a
// directory (dir) or nothing.
func token(data []byte, exists, dir bool) string {
	switch {
	case dir:
		return dirToken
	case exists:
		return statetree.PutFile(data, nil)
	}
	return ""
}

// clone returns a copy of d that can be changed without changing d.
func cloneHistory(d *historyDoc) *historyDoc {
	c := *d
	c.Commits = slices.Clone(d.Commits)
	c.Checkpoints = slices.Clone(d.Checkpoints)
	return &c
}

// history returns the history of e, reading it from the store the first
// time: its blob, then its tail. The caller holds the session's call lock.
func (m *Manager) history(ctx context.Context, e *entry) (*historyDoc, error) {
	if e.hist != nil {
		return e.hist, nil
	}
	d, docs, err := m.readHistory(ctx, e.handle, e.histHash)
	if err != nil {
		return nil, err
	}
	t, err := parseTail(e.tail)
	if err != nil {
		return nil, fmt.Errorf("session %s: reading its history: %w", e.handle, err)
	}
	e.hist, e.histDocs = t.extend(d, m.retention), docs
	return e.hist, nil
}

// headHistory reads the history that hd, a head of session h, names: its
// blob, then its tail; and the root documents both hold, by their hashes.
func (m *Manager) headHistory(ctx context.Context, h string, hd head) (*historyDoc, map[string][]byte, error) {
	d, docs, err := m.readHistory(ctx, h, hd.History)
	if err != nil {
		return nil, nil, err
	}
	t, err := parseTail(hd.Tail)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: reading its history: %w", h, err)
	}
	if len(t.docs) > 0 {
		docs = maps.Clone(docs)
		if docs == nil {
			docs = map[string][]byte{}
		}
		maps.Copy(docs, t.docs)
	}
	return t.extend(d, m.retention), docs, nil
}

// A history's blob holds the history and the root documents of the
// states its records and checkpoints name, those of up to docMax bytes (a
// larger one is a blob of its own, as every one was in histories written
// before tails). It is binary (format 5, historyMagic): the magic; the
// number of the next record and the lost commit (uvarints, see
// session.HistoryLog); the checkpoints' JSON (its length, a uvarint, 0 for
// none); then, to the end, the records and documents as a tail holds them
// (appendTail), oldest first: each record with the document of the state
// it reached beside it, or naming its root when the blob does not hold the
// document (recRoot); before a record, the document of the state it goes
// back to when that is not the state of the record before and the blob
// holds it no other way (an entry of a document alone); after the
// records, the documents of the checkpoints' states that no record
// reached. Writing it is appending each record's few bytes and what each
// state changed of the one before, about as cheap as the tail, and it
// holds what a tail does in about as many bytes.
//
// Blobs of the formats before are read as they are: JSON (storedHistoryDoc),
// its documents chained the same way in doc_chain (format 4) or whole in
// docs by their hashes (format 3). A history whose records name states by
// something other than hashes, which the binary form cannot hold, is still
// written that way, its documents whole.
type storedHistoryDoc struct {
	session.HistoryLog
	Docs  map[string][]byte `json:"docs,omitempty"`
	Chain []byte            `json:"doc_chain,omitempty"`
}

// historyMagic starts a history's blob of format 5.
var historyMagic = []byte("whb1")

// docMax is the largest root document a history's blob holds.
const docMax = 16 << 10

// readHistory reads the history blob hash of session h ("": none yet),
// and the root documents it holds.
func (m *Manager) readHistory(ctx context.Context, h, hash string) (*historyDoc, map[string][]byte, error) {
	if hash == "" {
		return &historyDoc{Next: 1}, nil, nil
	}
	b, err := m.store.Blob(ctx, h, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the session's history: %w", err)
	}
	d, docs, err := parseHistoryBlob(b)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the session's history: %w", err)
	}
	return d, docs, nil
}

// parseHistoryBlob returns the history the blob b holds, and its root
// documents by their hashes.
func parseHistoryBlob(b []byte) (*historyDoc, map[string][]byte, error) {
	if rest, ok := bytes.CutPrefix(b, historyMagic); ok {
		return readHistoryBlob(rest)
	}
	d := storedHistoryDoc{HistoryLog: historyDoc{Next: 1}}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, nil, err
	}
	if len(d.Chain) > 0 {
		chained, err := tailDocs(d.Chain)
		if err != nil {
			return nil, nil, err
		}
		if d.Docs == nil {
			d.Docs = chained
		} else {
			maps.Copy(d.Docs, chained)
		}
	}
	return &d.HistoryLog, d.Docs, nil
}

// readHistoryBlob returns the history that b, a blob of format 5 after
// its magic, holds, and its root documents by their hashes.
func readHistoryBlob(b []byte) (*historyDoc, map[string][]byte, error) {
	r := tailReader(b)
	d := &historyDoc{}
	var err error
	if d.Next, err = r.uvarint(); err != nil {
		return nil, nil, err
	}
	if d.Lost, err = r.uvarint(); err != nil {
		return nil, nil, err
	}
	cps, err := r.bytes()
	if err != nil {
		return nil, nil, err
	}
	if len(cps) > 0 {
		if err := json.Unmarshal(cps, &d.Checkpoints); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", errBadTail, err)
		}
	}
	t, err := parseTail(r)
	if err != nil {
		return nil, nil, err
	}
	d.Commits = t.records
	return d, t.docs, nil
}

// historyBlob returns the blob of the history d, with the root documents
// of the states it names that docs finds (by their hashes), up to docMax
// bytes each; it adds to blobs those larger, and returns the documents
// the blob holds.
func historyBlob(d *historyDoc, docs func(root string) ([]byte, bool), blobs map[string][]byte) ([]byte, map[string][]byte, error) {
	held := map[string][]byte{}
	// hold adds the document of root to held, if the blob is to hold it
	// and does not yet, and returns it.
	hold := func(root string) (doc []byte, added bool) {
		if _, ok := held[root]; ok {
			return nil, false
		}
		doc, ok := docs(root)
		switch {
		case !ok:
			// A blob of its own already (written before tails, or the
			// session's empty state).
			return nil, false
		case len(doc) > docMax:
			blobs[root] = doc
			return nil, false
		}
		held[root] = doc
		return doc, true
	}
	b := append(make([]byte, 0, 64+48*len(d.Commits)), historyMagic...)
	b = binary.AppendUvarint(b, d.Next)
	b = binary.AppendUvarint(b, d.Lost)
	var cps []byte
	if len(d.Checkpoints) > 0 {
		var err error
		if cps, err = json.Marshal(d.Checkpoints); err != nil {
			return nil, nil, err
		}
	}
	b = binary.AppendUvarint(b, uint64(len(cps)))
	b = append(b, cps...)
	var rec, base []byte // a record's bytes; the document of the entry before
	last := ""           // the root of the entry before
	var before *session.HistoryCommit
	for i := range d.Commits {
		c := &d.Commits[i]
		if c.Prev != last {
			if doc, ok := hold(c.Prev); ok {
				b, base, last = appendTail(b, base, nil, doc), doc, c.Prev
			}
		}
		doc, ok := hold(c.Root)
		if !ok {
			doc, ok = held[c.Root] // beside an earlier record too
		}
		var err error
		rec, err = appendRecord(rec[:0], c, before, c.Prev != last, !ok)
		if errors.Is(err, errNotHash) {
			return historyJSON(d, docs, blobs)
		}
		if err != nil {
			return nil, nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
		if ok {
			b, base = appendDoc(b, base, doc), doc
		}
		last, before = c.Root, c
	}
	for _, cp := range d.Checkpoints {
		if doc, ok := hold(cp.Root); ok {
			b, base = appendTail(b, base, nil, doc), doc
		}
	}
	return b, held, nil
}

// historyJSON returns the blob of the history d as JSON, with the root
// documents of the states it names whole, as historyBlob does for a
// history it cannot write in binary.
func historyJSON(d *historyDoc, docs func(root string) ([]byte, bool), blobs map[string][]byte) ([]byte, map[string][]byte, error) {
	held := map[string][]byte{}
	keep := func(root string) {
		switch doc, ok := docs(root); {
		case !ok:
		case len(doc) > docMax:
			blobs[root] = doc
		default:
			held[root] = doc
		}
	}
	for _, c := range d.Commits {
		keep(c.Prev)
		keep(c.Root)
	}
	for _, c := range d.Checkpoints {
		keep(c.Root)
	}
	b, err := json.Marshal(storedHistoryDoc{HistoryLog: *d, Docs: held})
	return b, held, err
}

// storedHistory reads the history of session h as the store holds it.
func (m *Manager) storedHistory(ctx context.Context, h string) (*historyDoc, error) {
	d, _, err := m.storedHistoryDocs(ctx, h)
	return d, err
}

// storedHistoryDocs is storedHistory, with the root documents that the
// history holds, by their hashes.
func (m *Manager) storedHistoryDocs(ctx context.Context, h string) (*historyDoc, map[string][]byte, error) {
	sh, err := m.store.Load(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return &historyDoc{Next: 1}, nil, nil // a session that never committed
	}
	if err != nil {
		return nil, nil, err
	}
	hd, err := readHead(h, sh.Data)
	if err != nil {
		return nil, nil, err
	}
	return m.headHistory(ctx, h, hd)
}

// callHistory is what one call does to its session's history: the
// commit's record, and what the history tools ask the commit to record
// besides. It is the session.History of the call (Use.History).
type callHistory struct {
	m *Manager
	e *entry
	// checkpoint is to be added (session_checkpoint); undone lists the
	// commits an undo or restore undid (restores is set).
	checkpoint *session.Checkpoint
	undone     []uint64
	restores   bool
}

var _ session.History = (*callHistory)(nil)

// pending reports whether the call asked for a change of the history
// whatever its state.
func (ch *callHistory) pending() bool { return ch != nil && (ch.checkpoint != nil || ch.restores) }

// nextHistory returns the history of e after the commit of call, which
// moves the state to st and changed files (changed says whether either
// changed anything), with the call's record (nil when it adds none), and
// keep, the root document of the state before the call when neither the
// store nor the tail holds it yet (the record goes back to it); it adds to
// blobs the contents of files outside the state that the record names,
// and the blobs of the empty state for the first (blobs may be nil when
// there are neither).
// The caller holds the session's call lock.
func (m *Manager) nextHistory(ctx context.Context, e *entry, call *Commit, ch *callHistory, st *statetree.State, changed bool, files []session.FileChange, blobs map[string][]byte) (d *historyDoc, rec *session.HistoryCommit, keep []byte, err error) {
	cur, err := m.history(ctx, e)
	if err != nil {
		return nil, nil, nil, err
	}
	// The new history shares cur's records: a commit's record is
	// appended past the end of cur's (which holds as many as it did), and
	// the oldest are dropped by slicing, so that a commit costs its own
	// record, not the history's; cur changes only if the commit lands.
	// Marking records undone, or changing checkpoints, copies them first.
	d = &historyDoc{Next: cur.Next, Commits: cur.Commits, Checkpoints: cur.Checkpoints, Lost: cur.Lost}
	prev := e.empty
	switch {
	case e.state == nil:
		maps.Copy(blobs, e.emptyBlobs) // the state to go back to
	case !e.docStored:
		prev, keep = e.state.Root, e.state.Doc
	default:
		prev = e.state.Root
	}
	restores := ch != nil && ch.restores
	if changed || restores {
		// The record names the STATE slices the call changed only when
		// read (withChanged): a commit pays for no reader.
		d.Commits = append(d.Commits, session.HistoryCommit{Seq: d.Next, CallID: call.CallID, Tool: call.Tool, Time: m.now(), Prev: prev, Root: st.Root, Restores: restores})
		d.Next++
		d.Commits[len(d.Commits)-1].Files = historyFiles(files, blobs)
		d.Commits, d.Lost = trimHistory(d.Commits, d.Lost, m.retention)
		rec = &d.Commits[len(d.Commits)-1]
	}
	if ch != nil {
		if len(ch.undone) > 0 {
			d.Commits = slices.Clone(d.Commits)
			for i := range d.Commits {
				if slices.Contains(ch.undone, d.Commits[i].Seq) {
					d.Commits[i].Undone = true
				}
			}
		}
		if cp := ch.checkpoint; cp != nil {
			cp.Seq, cp.Root = d.Next-1, st.Root
			d.Checkpoints = append(slices.DeleteFunc(slices.Clone(d.Checkpoints), func(c session.Checkpoint) bool { return c.Name == cp.Name }), *cp)
			if len(d.Checkpoints) > m.retention {
				d.Checkpoints = d.Checkpoints[len(d.Checkpoints)-m.retention:]
			}
		}
	}
	return d, rec, keep, nil
}

// historyFiles records the files a call changed, and adds to blobs the
// content of those outside the stored state, before and after.
func historyFiles(changes []session.FileChange, blobs map[string][]byte) []session.HistoryFile {
	out := make([]session.HistoryFile, 0, len(changes))
	put := func(data []byte, exists bool) string {
		if !exists {
			return ""
		}
		return statetree.PutFile(data, func(h string, b []byte) { blobs[h] = b })
	}
	for _, c := range changes {
		f := session.HistoryFile{Path: c.Path, Dir: c.Dir, Outside: c.Outside}
		switch {
		case c.Outside && c.Dir:
			f.Before, f.After = token(nil, false, c.Existed), token(nil, false, c.Exists)
		case c.Outside:
			f.Before, f.After = put(c.Before, c.Existed), put(c.After, c.Exists)
			f.BeforeSize, f.AfterSize = int64(len(c.Before)), int64(len(c.After))
		}
		out = append(out, f)
	}
	return out
}

// Retention implements session.History.
func (ch *callHistory) Retention() int { return ch.m.retention }

// Log implements session.History: the history, with the STATE slices
// each record changed (withChanged). The caller holds the session's call
// lock.
func (ch *callHistory) Log(ctx context.Context) (*session.HistoryLog, error) {
	d, err := ch.m.history(ctx, ch.e)
	if err != nil {
		return nil, err
	}
	return ch.m.withChanged(ctx, ch.e.handle, d, ch.e.docs())
}

// docs returns the root documents that the history of e holds, in its
// tail and its blob, by their hashes. The caller holds the session's call
// lock, and has read the history (Manager.history).
func (e *entry) docs() map[string][]byte {
	docs := maps.Clone(e.tailDocs)
	for root, doc := range e.histDocs {
		if docs == nil {
			docs = map[string][]byte{}
		}
		docs[root] = doc
	}
	return docs
}

// Checkpoint implements session.History.
func (ch *callHistory) Checkpoint(name string) {
	ch.checkpoint = &session.Checkpoint{Name: name, Time: ch.m.now()}
}

// RestoreTo implements session.History: it checks that every file (and
// directory) outside the state that the commits since seq changed still
// holds what the last of them left there (refusing, naming the files,
// when one was changed outside the server since), decodes the state root
// into s, and puts those files back as they were then: directories made
// and files written in path order, then files and directories removed,
// deepest first. The caller holds the session's call lock.
func (ch *callHistory) RestoreTo(ctx context.Context, s *session.Session, seq uint64, root string) ([]string, string, error) {
	d, err := ch.m.history(ctx, ch.e)
	if err != nil {
		return nil, "", err
	}
	if d.Lost > seq {
		return nil, "The history no longer holds every call since then (it keeps the last " + fmt.Sprint(ch.m.retention) + "), so their files cannot be put back. Nothing was changed.", nil
	}
	type file struct {
		expect, final string // tokens (see session.HistoryFile)
		size          int64  // of the final content
	}
	files := map[string]*file{}
	var since []session.HistoryCommit
	for _, c := range slices.Backward(d.Commits) {
		if c.Seq <= seq {
			break
		}
		since = append(since, c)
		for _, f := range c.Files {
			if !f.Outside {
				continue
			}
			if files[f.Path] == nil {
				files[f.Path] = &file{expect: f.After}
			}
			files[f.Path].final, files[f.Path].size = f.Before, f.BeforeSize
		}
	}
	fs := session.FilesOf(s)
	if len(files) > 0 && len(fs) != 1 {
		return nil, "", fmt.Errorf("the session has %d resources of files, want 1", len(fs))
	}
	paths := slices.Sorted(maps.Keys(files))
	var changedOutside []string
	for _, p := range paths {
		data, exists, dir, err := fs[0].File(p)
		if err != nil {
			return nil, "", err
		}
		if token(data, exists, dir) != files[p].expect {
			changedOutside = append(changedOutside, p)
		}
	}
	if len(changedOutside) > 0 {
		return nil, fmt.Sprintf("Cannot go back: these files were changed outside the server since the server last wrote them: %s. Nothing was changed; put them back as the server left them, or keep working from here.", strings.Join(changedOutside, ", ")), nil
	}
	get := ch.m.getter(context.Background(), ch.e.handle, ch.e.docs())
	s.ReplaceSlices(nil)
	if _, err := statetree.DecodeRoot(s, root, get); err != nil {
		return nil, "", err
	}
	var put []string
	name := func(p, tok string) string {
		if tok == dirToken {
			return p + "/"
		}
		return p
	}
	for _, p := range paths {
		f := files[p]
		var err error
		switch {
		case f.final == f.expect || f.final == "":
			continue
		case f.final == dirToken:
			err = fs[0].PutDir(p, true)
		default:
			var data []byte
			if data, err = statetree.GetFile(f.final, f.size, get); err == nil {
				err = fs[0].PutFile(p, data, true)
			}
		}
		if err != nil {
			return nil, "", fmt.Errorf("putting %s back: %w", p, err)
		}
		put = append(put, name(p, f.final))
	}
	for _, p := range slices.Backward(paths) {
		f := files[p]
		var err error
		switch {
		case f.final != "" || f.expect == "":
			continue
		case f.expect == dirToken:
			err = fs[0].PutDir(p, false)
		default:
			err = fs[0].PutFile(p, nil, false)
		}
		if err != nil {
			return nil, "", fmt.Errorf("putting %s back: %w", p, err)
		}
		put = append(put, name(p, f.expect))
	}
	slices.Sort(put)
	for _, c := range since {
		if !c.Restores && !c.Undone {
			ch.undone = append(ch.undone, c.Seq)
		}
	}
	ch.restores = true
	return put, "", nil
}

// History returns the history of session h as the store holds it, for a
// read outside a call (a resource); nil when the sessions keep none. It
// goes back nowhere: RestoreTo fails, and Checkpoint does nothing.
func (m *Manager) History(h string) session.History {
	if m.retention == 0 {
		return nil
	}
	return storedHistory{m: m, h: h}
}

// storedHistory is Manager.History.
type storedHistory struct {
	m *Manager
	h string
}

func (s storedHistory) Retention() int { return s.m.retention }
func (s storedHistory) Log(ctx context.Context) (*session.HistoryLog, error) {
	d, docs, err := s.m.storedHistoryDocs(ctx, s.h)
	if err != nil {
		return nil, err
	}
	return s.m.withChanged(ctx, s.h, d, docs)
}
func (s storedHistory) Checkpoint(string) {}
func (s storedHistory) RestoreTo(context.Context, *session.Session, uint64, string) ([]string, string, error) {
	return nil, "", errors.New("a session's history is restored only by a call")
}
