package workspace

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// journalSuffix ends the names of undo journals in a workspace's state
// directory.
const journalSuffix = ".journal"

// txn is what one call holds on a disk workspace: the locks of the paths
// it may change, and its undo journal. It begins with the call's first
// lock or its transaction, whichever comes first, and ends with the
// transaction: the journal is removed (the commit), or replayed backwards
// and then removed (the restore), and only then are the locks released.
type txn struct {
	id    string // names the journal, the lock files' marks and the temporary files
	owner string // the call that took the first lock
	inTx  bool   // a transaction covers it, and ends it

	deadline time.Time // for the locks taken as files change; zero: none
	locks    map[string]*fileLock
	last     string // the greatest path locked, in path order

	journal  *os.File // nil until the first change
	recorded map[string]bool
}

func newTxn(owner string) *txn {
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	return &txn{id: hex.EncodeToString(rnd[:]), owner: owner, locks: map[string]*fileLock{}, recorded: map[string]bool{}}
}

// lockCtx bounds a lock taken as a file changes by the call's deadline.
func (t *txn) lockCtx() (context.Context, context.CancelFunc) {
	if t.deadline.IsZero() {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), t.deadline)
}

// lock takes, for the current call, the locks of paths (normalised) that
// it does not hold yet. See Workspace.Lock.
func (s *diskStore) lock(ctx context.Context, call string, paths []string) (func(), error) {
	s.mu.Lock()
	t := s.c
	if t != nil && !t.inTx && t.owner != call {
		// Left by a call that ended before its transaction and whose
		// unlock has not run yet.
		_ = s.endLocked(t)
		t = nil
	}
	if t == nil {
		t = newTxn(call)
		s.c = t
	}
	s.mu.Unlock()
	if d, ok := ctx.Deadline(); ok && (t.deadline.IsZero() || d.Before(t.deadline)) {
		t.deadline = d
	}
	var todo []string
	for _, p := range paths {
		if _, ok := t.locks[p]; !ok && !slices.Contains(todo, p) {
			todo = append(todo, p)
		}
	}
	slices.SortFunc(todo, comparePaths)
	for _, p := range todo {
		if err := s.take(ctx, t, p); err != nil {
			return nil, err
		}
	}
	return func() {
		s.mu.Lock()
		if s.c == t && !t.inTx {
			_ = s.endLocked(t)
		}
		s.mu.Unlock()
	}, nil
}

// take takes the lock of p for t. Locks are taken in path order: a call
// waits for a lock only when p comes after every path it holds, and
// otherwise fails at once if the lock is busy, so that no two calls ever
// wait for each other. A lock file that names a journal left by a dead
// process is dealt with first: p is put back from that journal.
func (s *diskStore) take(ctx context.Context, t *txn, p string) error {
	wait := t.last == "" || comparePaths(p, t.last) > 0
	l, mark, err := acquire(ctx, lockName(s.b.state, p), wait)
	switch {
	case errors.Is(err, errBusy), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &busyError{path: p}
	case err != nil:
		// Not %w: the error is about the state directory, not about p.
		return fmt.Errorf("locking %s: %v", p, err)
	}
	if mark != "" && mark != t.id {
		s.b.recoverPath(mark, p)
	}
	if err := l.mark(t.id); err != nil {
		_ = l.release()
		return fmt.Errorf("locking %s: %v", p, err)
	}
	t.locks[p] = l
	if wait {
		t.last = p
	}
	return nil
}

// unlock lets go of the lock of p before t ends: if the process dies
// before t commits, p then stays as it is (its lock file no longer names
// t's journal).
func (t *txn) unlock(p string) error {
	l, ok := t.locks[p]
	if !ok {
		return nil
	}
	delete(t.locks, p)
	if len(t.locks) == 0 {
		t.last = ""
	}
	return l.release()
}

// withTxn runs fn in the current call's txn, or, outside any, in one of
// its own that fn's changes commit.
func (s *diskStore) withTxn(fn func(t *txn) error) error {
	s.mu.Lock()
	t := s.c
	own := t == nil
	if own {
		t = newTxn("")
		s.c = t
	}
	s.mu.Unlock()
	err := fn(t)
	if own {
		if err := s.end(t); err != nil {
			s.b.logger.Error("workspace: ending a change made outside a call", "err", err)
		}
	}
	return err
}

// change is called before t changes p: it takes p's lock (unless the
// change creates a missing parent directory: directories are not locked),
// journals what p holds now if t has not changed it before, and journals
// what t is about to leave there. The first record of a path is synced to
// disk before the change is made.
func (s *diskStore) change(t *txn, p string, intent state) error {
	if _, ok := t.locks[p]; !ok && intent.kind != kindDir {
		ctx, cancel := t.lockCtx()
		err := s.take(ctx, t, p)
		cancel()
		if err != nil {
			return err
		}
	}
	var buf []byte
	first := !t.recorded[p]
	if first {
		before, err := s.current(p, true)
		if err != nil {
			return fmt.Errorf("saving %s for undo: %w", p, err)
		}
		buf = appendRecord(buf, recBefore, p, before)
	}
	buf = appendRecord(buf, recIntent, p, intent)
	if err := s.appendJournal(t, buf, first); err != nil {
		return fmt.Errorf("saving %s for undo: %v", p, err)
	}
	t.recorded[p] = true
	return nil
}

// untouched journals that t did not change p after all (another call made
// the directory t was about to make): a restore leaves it alone.
func (s *diskStore) untouched(t *txn, p string) error {
	if err := s.appendJournal(t, appendRecord(nil, recUntouched, p, state{}), false); err != nil {
		return fmt.Errorf("saving %s for undo: %v", p, err)
	}
	t.recorded[p] = false
	return nil
}

// appendJournal writes records to t's journal, creating it first.
func (s *diskStore) appendJournal(t *txn, buf []byte, sync bool) error {
	if t.journal == nil {
		// Created and flocked like a lock file: a process starting on the
		// workspace may take the new, empty journal for one a dead process
		// left and remove it before the flock; then it is made again.
		f, err := flockFile(context.Background(), filepath.Join(s.b.state, t.id+journalSuffix), true)
		if err != nil {
			return err
		}
		t.journal = f
		if err := syncDir(s.b.state); err != nil {
			return err
		}
	}
	if _, err := t.journal.Write(buf); err != nil {
		return err
	}
	if sync {
		return t.journal.Sync()
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// end ends t if it is the current txn: see endLocked.
func (s *diskStore) end(t *txn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endLocked(t)
}

// endLocked commits t: its journal goes (the commit point), then its locks
// are released. s.mu is held.
func (s *diskStore) endLocked(t *txn) error {
	if s.c == t {
		s.c = nil
	}
	var errs []error
	if t.journal != nil {
		errs = append(errs, closeAndRemove(t.journal))
		t.journal = nil
	}
	for p, l := range t.locks {
		errs = append(errs, l.release())
		delete(t.locks, p)
	}
	return errors.Join(errs...)
}

// rollback puts back every path t changed, from its journal.
func (s *diskStore) rollback(t *txn) error {
	if t.journal == nil {
		return nil
	}
	recs, err := readRecords(t.journal)
	if err != nil {
		return err
	}
	return s.undo(t.id, recs, nil)
}

// The records of a journal.
const (
	// recBefore: what a path held before the call first changed it.
	recBefore = 'B'
	// recIntent: what the call was about to leave at a path.
	recIntent = 'I'
	// recUntouched: the call did not change the path after all; what it
	// does to it next starts with a new recBefore.
	recUntouched = 'U'
)

type record struct {
	typ  byte
	path string
	st   state
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one record to buf: a little-endian uint32 length of
// the payload, a uint32 CRC-32C of it, and the payload: the type, the
// kind, the mode as a uvarint, then the path, a link's target, a file's
// hash and a file's content, each as a uvarint length and its bytes.
func appendRecord(buf []byte, typ byte, p string, st state) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, 8)...)
	buf = append(buf, typ, byte(st.kind))
	buf = binary.AppendUvarint(buf, uint64(st.mode))
	for _, f := range [][]byte{[]byte(p), []byte(st.target), []byte(st.hash), st.data} {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	payload := buf[start+8:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, crcTable))
	return buf
}

// readRecords reads a journal from its start. A torn last record, whose
// write a crash cut short, ends it: its change was never made.
func readRecords(f *os.File) ([]record, error) {
	r := bufio.NewReader(io.NewSectionReader(f, 0, 1<<62))
	var recs []record
	for {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return recs, nil
			}
			return nil, err
		}
		n := binary.LittleEndian.Uint32(head[:])
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return recs, nil
			}
			return nil, err
		}
		rec, ok := decodeRecord(payload)
		if !ok || crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(head[4:]) {
			return recs, nil
		}
		recs = append(recs, rec)
	}
}

func decodeRecord(b []byte) (record, bool) {
	if len(b) < 2 {
		return record{}, false
	}
	rec := record{typ: b[0], st: state{kind: stateKind(b[1])}}
	b = b[2:]
	mode, n := binary.Uvarint(b)
	if n <= 0 {
		return record{}, false
	}
	rec.st.mode, b = fs.FileMode(mode), b[n:]
	var fields [4][]byte
	for i := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return record{}, false
		}
		fields[i], b = b[n:n+int(l)], b[n+int(l):]
	}
	rec.path, rec.st.target, rec.st.hash = string(fields[0]), string(fields[1]), string(fields[2])
	if rec.st.kind == kindFile && rec.typ == recBefore {
		rec.st.data, rec.st.hash = fields[3], hashVersion(fields[3])
	}
	return rec, true
}

// undoEntry is one path of a journal: what it held before the call, and
// every state the call was about to leave there.
type undoEntry struct {
	before  state
	intents []state
}

// undo puts back the paths of a journal (those keep allows; all when keep
// is nil), newest first change first. A path that holds neither its state
// before the call nor one the call left there was changed since by someone
// who took no lock (another program): it is left alone and reported.
// Temporary files are named after the journal id.
func (s *diskStore) undo(id string, recs []record, keep func(string) bool) error {
	var order []string
	entries := map[string]*undoEntry{}
	for _, r := range recs {
		e := entries[r.path]
		switch {
		case r.typ == recBefore && e == nil:
			entries[r.path] = &undoEntry{before: r.st}
			order = append(order, r.path)
		case r.typ == recIntent && e != nil:
			e.intents = append(e.intents, r.st)
		case r.typ == recUntouched:
			delete(entries, r.path)
			order = slices.DeleteFunc(order, func(p string) bool { return p == r.path })
		}
	}
	var errs []error
	for _, p := range slices.Backward(order) {
		if keep != nil && !keep(p) {
			continue
		}
		if err := s.undoPath(id, p, entries[p]); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", p, err))
		}
	}
	// Before the journal goes, or another call takes the path: a reader
	// that read a path before it was put back, and the journals after,
	// reads again (overlay.go).
	s.b.countRollback()
	return errors.Join(errs...)
}

func (s *diskStore) undoPath(id, p string, e *undoEntry) error {
	cur, err := s.current(p, false)
	if err != nil {
		return err
	}
	if sameState(cur, e.before) {
		return nil
	}
	if !slices.ContainsFunc(e.intents, func(st state) bool { return sameState(cur, st) }) {
		return errors.New("changed by someone else since this call; left as it is")
	}
	name := osName(p)
	switch e.before.kind {
	case kindAbsent:
		err := s.root.Remove(name)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return errors.New("a directory someone else has put files in since; left as it is")
		}
		return diskErr(err)
	case kindDir:
		if cur.kind != kindAbsent {
			if err := s.root.Remove(name); err != nil {
				return diskErr(err)
			}
		}
		if err := s.root.MkdirAll(name, e.before.mode); err != nil {
			return diskErr(err)
		}
		return diskErr(s.root.Chmod(name, e.before.mode))
	case kindFile:
		if cur.kind == kindDir || cur.kind == kindLink {
			if err := s.root.Remove(name); err != nil {
				return diskErr(err)
			}
		}
		if err := s.makeParent(p); err != nil {
			return err
		}
		return atomicWrite(s.root, id, p, e.before.data, e.before.mode)
	case kindLink:
		if cur.kind != kindAbsent {
			if err := s.root.Remove(name); err != nil {
				return diskErr(err)
			}
		}
		if err := s.makeParent(p); err != nil {
			return err
		}
		return diskErr(s.root.Symlink(e.before.target, name))
	}
	return nil
}

// makeParent recreates the directory p was in, if a removal the undo has
// not reached yet took it away: it is put back as it was later in the
// undo.
func (s *diskStore) makeParent(p string) error {
	if dir := parent(p); dir != "" {
		return diskErr(s.root.MkdirAll(osName(dir), 0o755))
	}
	return nil
}

// removeTemps removes the temporary files named after journal id in the
// directories of paths.
func (s *diskStore) removeTemps(id string, paths []string) {
	prefix := tmpPrefix + id + "-"
	seen := map[string]bool{}
	for _, p := range paths {
		dir := parent(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		entries, err := s.readDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				_ = s.root.Remove(osName(join(dir, e.Name())))
			}
		}
	}
}

// recoverPath puts p back as it was before the call of journal id, a call
// whose process died holding p's lock (the caller holds it now), and
// removes that call's temporary files next to p. The rest of that call is
// put back as each of its paths is next locked, and whole at the next
// start.
func (b *diskBackend) recoverPath(id, p string) {
	f, err := os.Open(filepath.Join(b.state, id+journalSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return // the call committed, or was put back whole
	}
	if err == nil {
		var recs []record
		if recs, err = readRecords(f); err == nil {
			st := &diskStore{b: b, root: b.root}
			err = st.undo(id, recs, func(q string) bool { return q == p })
			st.removeTemps(id, []string{p})
		}
		f.Close()
	}
	if err != nil {
		b.logger.Warn("workspace: putting back a file that a dead process was changing", "path", p, "journal", id, "err", err)
		return
	}
	b.logger.Warn("workspace: put back a file that a dead process was changing", "path", p, "journal", id)
}

// recoverAll finishes what dead processes left in the state directory:
// each journal whose call died before it committed is replayed backwards
// whole, its temporary files removed, and the journal removed; lock files
// nobody holds are removed. Journals and locks of live processes are left
// alone. It returns how many calls it put back.
func (b *diskBackend) recoverAll() (int, error) {
	entries, err := os.ReadDir(b.state)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), journalSuffix); ok {
			done, err := b.recoverJournal(id)
			if done {
				n++
			}
			errs = append(errs, err)
		}
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), lockSuffix) {
			errs = append(errs, b.removeIfFree(filepath.Join(b.state, e.Name())))
		}
	}
	return n, errors.Join(errs...)
}

// removeIfFree removes a lock file that no live process holds, unless it
// names a journal still there (one whose recovery failed: the mark says
// which files to put back).
func (b *diskBackend) removeIfFree(name string) error {
	l, mark, err := acquire(context.Background(), name, false)
	if errors.Is(err, errBusy) {
		return nil
	}
	if err != nil {
		return err
	}
	if mark != "" {
		if _, err := os.Stat(filepath.Join(b.state, mark+journalSuffix)); err == nil {
			l.f.Close()
			l.unlock()
			return nil
		}
	}
	return l.release()
}

// recoverJournal puts back the call of journal id if its process died: it
// takes the locks of the call's files in path order (each lock file names
// the journal, unless someone took the lock since and put the file back
// then), replays the journal backwards over the files still marked and
// the directories, removes the call's temporary files, then the journal,
// then the locks. A crash in the middle leaves the journal for the next
// start.
func (b *diskBackend) recoverJournal(id string) (bool, error) {
	name := filepath.Join(b.state, id+journalSuffix)
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if ok, err := tryFlock(f); !ok || err != nil {
		return false, err // a live process's call
	}
	recs, err := readRecords(f)
	if err != nil {
		return false, fmt.Errorf("journal %s: %w", name, err)
	}
	if len(recs) == 0 {
		// Died before its first change, or is being born (see
		// createJournal).
		return false, os.Remove(name)
	}
	locked := map[string]bool{}
	var paths []string
	for _, r := range recs {
		if !slices.Contains(paths, r.path) {
			paths = append(paths, r.path)
		}
		if r.typ == recIntent && r.st.kind != kindDir {
			locked[r.path] = true
		}
	}
	var toLock []string
	for p := range locked {
		toLock = append(toLock, p)
	}
	slices.SortFunc(toLock, comparePaths)
	keep := map[string]bool{}
	for _, p := range paths {
		keep[p] = !locked[p]
	}
	var held []*fileLock
	defer func() {
		for _, l := range held {
			_ = l.release()
		}
	}()
	for _, p := range toLock {
		l, mark, err := acquire(context.Background(), lockName(b.state, p), true)
		if err != nil {
			return false, fmt.Errorf("locking %s: %w", p, err)
		}
		held = append(held, l)
		switch mark {
		case id:
			keep[p] = true
		case "":
		default:
			b.recoverPath(mark, p)
		}
	}
	st := &diskStore{b: b, root: b.root}
	err = st.undo(id, recs, func(p string) bool { return keep[p] })
	st.removeTemps(id, paths)
	if err != nil {
		b.logger.Warn("workspace: a call left in flight by a dead process was put back, except some paths", "journal", id, "err", err)
	}
	return true, os.Remove(name)
}
