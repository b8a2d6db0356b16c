package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// tmpPrefix starts the names of the temporary files of atomic writes. The
// disk backend never lists them.
const tmpPrefix = ".wink-tmp-"

// diskBackend is the disk backend: a host directory shared by every
// session. Every access goes through an os.Root, which resolves each path
// beneath the directory atomically: no "..", absolute path or symbolic link
// (even one swapped in between a check and a use) reaches outside it. The
// locks and undo journals of the calls in flight are kept in state, the
// workspace's directory in the state directory.
type diskBackend struct {
	dir    string
	real   string // dir with symbolic links resolved
	root   *os.Root
	state  string
	logger *slog.Logger

	// recovered is how many calls left in flight the backend put back
	// when it opened.
	recovered int
	// stop ends the repair (repair.go), which closes repaired as it ends.
	stop, repaired chan struct{}
	// journals are the journals of calls in flight that readers have
	// read (overlay.go).
	journals journalCache
}

func (b *diskBackend) open() (store, error) { return &diskStore{b: b, root: b.root}, nil }

func (b *diskBackend) kind() string { return "disk" }

// Close stops the repair, closes the directory, and removes the
// workspace's directory in the state directory if nothing but its root
// file is left in it.
func (b *diskBackend) Close() error {
	close(b.stop)
	<-b.repaired
	b.forget()
	return b.root.Close()
}

// diskStore is one session's view of the shared directory, with what its
// current call holds: locks and an undo journal.
type diskStore struct {
	b    *diskBackend
	root *os.Root

	// mu guards c: the unlock of a call that ended before its transaction
	// runs once the call is over, when the session's next call may have
	// begun.
	mu sync.Mutex
	c  *txn
}

// osName turns a normalised path into a name for os.Root.
func osName(p string) string {
	if p == "" {
		return "."
	}
	return filepath.FromSlash(p)
}

// diskErr maps an error of os.Root to the store's errors.
func diskErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return errNotExist
	case strings.Contains(err.Error(), "path escapes from parent"):
		return errEscapes
	case errors.Is(err, syscall.ENOTDIR):
		return errNotDir
	case errors.Is(err, syscall.EISDIR):
		return errIsDir
	case errors.Is(err, syscall.ELOOP):
		return errEscapes
	}
	return err
}

// pathErr maps an error of os.Root about p to the store's errors; "not a
// directory" names the ancestor that is a file.
func (s *diskStore) pathErr(p string, err error) error {
	err = diskErr(err)
	if errors.Is(err, errNotDir) {
		for _, a := range ancestors(p) {
			if fi, e := s.root.Stat(osName(a)); e == nil && !fi.IsDir() {
				return &parentError{path: a}
			}
		}
	}
	return err
}

// errSpecial: a named pipe, socket or device, which the workspace lists
// but never opens. A *specialError says which.
var errSpecial = errors.New("not a regular file")

// specialError is errSpecial for a file of a known kind; path names it
// when it is not the path the call named (one inside a tree being moved).
type specialError struct{ kind, path string }

func (e *specialError) Error() string { return "a " + e.kind + ", not a regular file" }
func (e *specialError) Unwrap() error { return errSpecial }

// specialKind names the kind of a file that is neither regular nor a
// directory: "named pipe", "socket" or "device".
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "device"
	}
	return "special file"
}

// checkMode returns nil when m is a directory (dir) or a regular file (not
// dir), and the error that says what it is otherwise.
func checkMode(m fs.FileMode, dir bool) error {
	switch {
	case m.IsDir() && !dir:
		return errIsDir
	case m.IsDir(), m.IsRegular() && !dir:
		return nil
	case m.IsRegular():
		return errNotDir
	}
	return &specialError{kind: specialKind(m)}
}

// openChecked opens name in root for reading when it is a directory (dir)
// or a regular file (not dir). It never opens anything else, nor blocks on
// a named pipe: it checks the mode before the open, opens without
// blocking, and checks again on the open file, as another process may have
// put a pipe or a device there in between.
func openChecked(root *os.Root, name string, dir bool) (*os.File, fs.FileInfo, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkMode(fi.Mode(), dir); err != nil {
		return nil, nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		// A socket swapped in since the check.
		return nil, nil, &specialError{kind: "socket"}
	}
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = checkMode(fi.Mode(), dir)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func (s *diskStore) stat(p string) (Info, error) {
	if p == "" {
		return Info{Dir: true}, nil
	}
	fi, err := s.root.Stat(osName(p))
	if err != nil {
		return Info{}, s.pathErr(p, err)
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return Info{Path: p, Dir: true}, nil
	case !m.IsRegular():
		return Info{}, &specialError{kind: specialKind(m)}
	}
	return Info{Path: p, Size: fi.Size()}, nil
}

func (s *diskStore) lstat(p string) (Info, error) {
	fi, err := s.root.Lstat(osName(p))
	if err != nil {
		return Info{}, s.pathErr(p, err)
	}
	link := fi.Mode()&fs.ModeSymlink != 0
	if link {
		if fi, err = s.root.Stat(osName(p)); err != nil {
			return Info{}, s.pathErr(p, err)
		}
	}
	in := Info{Path: p, Link: link, ModTime: fi.ModTime()}
	switch m := fi.Mode(); {
	case m.IsDir():
		in.Dir = true
	case m.IsRegular():
		in.Size = fi.Size()
	default:
		in.Special = specialKind(m)
	}
	return in, nil
}

// openRegular opens the regular file at p for reading (see openChecked).
func (s *diskStore) openRegular(p string) (*os.File, fs.FileInfo, error) {
	if p == "" {
		return nil, nil, errIsDir
	}
	f, fi, err := openChecked(s.root, osName(p), false)
	if err != nil {
		return nil, nil, s.pathErr(p, err)
	}
	return f, fi, nil
}

func (s *diskStore) readFile(p string, max int64) ([]byte, error) {
	f, fi, err := s.openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max > 0 && fi.Size() > max {
		return nil, errTooLarge
	}
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	buf := make([]byte, 0, fi.Size()+1)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	if max > 0 && int64(len(buf)) > max {
		return nil, errTooLarge
	}
	return buf, nil
}

// unversioned reports whether err, from opening or reading a path, says
// that the path holds no regular file inside the root: it then has no
// version, which is not a failure of version.
func unversioned(err error) bool {
	return errors.Is(err, errNotExist) || errors.Is(err, errIsDir) || errors.Is(err, errNotDir) ||
		errors.Is(err, errEscapes) || errors.Is(err, errSpecial)
}

// version hashes the file as it streams by: constant memory, time
// proportional to this file alone.
func (s *diskStore) version(p string) (string, bool, error) {
	f, _, err := s.openRegular(p)
	switch {
	case unversioned(err):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), true, nil
}

func (s *diskStore) writeFile(p string, data []byte) error {
	return s.withTxn(func(t *txn) error { return s.write(t, p, data) })
}

// makeDirs makes, in t, each of dirs (outermost first) that is missing,
// and says whether it made the last one. A file in the way is a
// *parentError.
func (s *diskStore) makeDirs(t *txn, dirs []string) (made bool, err error) {
	for _, a := range dirs {
		made = false
		fi, err := s.root.Stat(osName(a))
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return false, &parentError{path: a}
		case !errors.Is(err, fs.ErrNotExist):
			return false, diskErr(err)
		}
		if err := s.change(t, a, state{kind: kindDir}); err != nil {
			return false, err
		}
		made = true
		if err := s.root.Mkdir(osName(a), 0o755); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return false, s.pathErr(a, err)
			}
			// Someone else made it meanwhile, or it is a dangling link.
			if fi, err := s.root.Stat(osName(a)); err != nil || !fi.IsDir() {
				return false, &parentError{path: a}
			}
			if err := s.untouched(t, a); err != nil {
				return false, err
			}
			made = false
		}
	}
	return made, nil
}

func (s *diskStore) mkdir(p string) (made bool, err error) {
	if p == "" {
		return false, nil
	}
	err = s.withTxn(func(t *txn) error {
		made, err = s.makeDirs(t, append(ancestors(p), p))
		return err
	})
	return made, err
}

// move journals every path it changes: the source's entries, deepest
// first, as removed, then the destination's, outermost first, as what they
// will hold. Undone newest first, that removes the destination's entries
// before their directories, and remakes the source's directories before
// their entries. Then one rename moves the whole tree.
func (s *diskStore) move(src, dst string) error {
	return s.withTxn(func(t *txn) error {
		if _, err := s.makeDirs(t, ancestors(dst)); err != nil {
			return err
		}
		var entries []moved
		if err := s.entriesUnder(src, "", &entries); err != nil {
			return err
		}
		for _, e := range entries {
			if err := s.change(t, join(src, e.rel), state{kind: kindAbsent}); err != nil {
				return err
			}
		}
		for _, e := range slices.Backward(entries) {
			if err := s.change(t, join(dst, e.rel), e.st); err != nil {
				return err
			}
		}
		return s.pathErr(dst, s.root.Rename(osName(src), osName(dst)))
	})
}

// moved is an entry of a tree being moved: its path below the tree's
// top, and what it holds.
type moved struct {
	rel string
	st  state
}

// entriesUnder appends to out the entries of the tree at p (rel below
// the top being moved), deepest first, the top last, without following
// symbolic links. A special file in the tree is an error: it is not moved.
func (s *diskStore) entriesUnder(p, rel string, out *[]moved) error {
	st, err := s.current(p, false)
	var special *specialError
	if errors.As(err, &special) {
		return &specialError{kind: special.kind, path: p}
	}
	if err != nil {
		return s.pathErr(p, err)
	}
	if st.kind == kindDir {
		kids, err := s.readDir(p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := s.entriesUnder(join(p, k.Name()), join(rel, k.Name()), out); err != nil {
				return err
			}
		}
	}
	*out = append(*out, moved{rel: rel, st: st})
	return nil
}

func (s *diskStore) write(t *txn, p string, data []byte) error {
	if _, err := s.makeDirs(t, ancestors(p)); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if fi, err := s.root.Lstat(osName(p)); err == nil {
		switch {
		case fi.IsDir():
			return errIsDir
		case fi.Mode()&fs.ModeSymlink != 0:
			if st, err := s.root.Stat(osName(p)); err == nil && st.IsDir() {
				return errIsDir
			}
		case fi.Mode().IsRegular():
			perm = fi.Mode().Perm()
		default:
			return &specialError{kind: specialKind(fi.Mode())}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return diskErr(err)
	}
	if err := s.change(t, p, state{kind: kindFile, hash: hashVersion(data)}); err != nil {
		return err
	}
	return atomicWrite(s.root, t.id, p, data, perm)
}

// atomicWrite writes data to a new temporary file next to p, named after
// the journal id, then renames it over p: a reader sees the old content or
// the new, never a mix, and two writers never interleave.
func atomicWrite(root *os.Root, id, p string, data []byte, perm fs.FileMode) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := join(parent(p), tmpPrefix+id+"-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(osName(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return diskErr(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Give the file the exact mode, whatever the umask.
		err = root.Chmod(osName(tmp), perm)
	}
	if err == nil {
		err = root.Rename(osName(tmp), osName(p))
	}
	if err != nil {
		_ = root.Remove(osName(tmp))
		return diskErr(err)
	}
	return nil
}

func (s *diskStore) remove(p string) (n int, err error) {
	err = s.withTxn(func(t *txn) error {
		n, err = s.removeAll(t, p)
		return err
	})
	return n, err
}

func (s *diskStore) removeAll(t *txn, p string) (int, error) {
	fi, err := s.root.Lstat(osName(p))
	if err != nil {
		return 0, s.pathErr(p, err)
	}
	if !fi.IsDir() {
		if err := s.change(t, p, state{kind: kindAbsent}); err != nil {
			return 0, err
		}
		if err := s.root.Remove(osName(p)); err != nil {
			return 0, diskErr(err)
		}
		return 1, nil
	}
	// Children first, each journaled before it goes, then the directory: a
	// restore replays the journal backwards, directory first.
	entries, err := s.readDir(p)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		k, err := s.removeAll(t, join(p, e.Name()))
		n += k
		if err != nil {
			return n, err
		}
	}
	if err := s.change(t, p, state{kind: kindAbsent}); err != nil {
		return n, err
	}
	if err := s.root.Remove(osName(p)); err != nil {
		return n, diskErr(err)
	}
	return n, nil
}

// readDir returns every entry of the directory at p, sorted by name.
func (s *diskStore) readDir(p string) ([]fs.DirEntry, error) {
	f, _, err := openChecked(s.root, osName(p), true)
	if err != nil {
		return nil, s.pathErr(p, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sortEntries(entries)
	return entries, nil
}

// sortEntries sorts by name: os.File.ReadDir does not, and byte order of
// names is path order among siblings.
func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// addressable reports whether a name found on disk can be named by a
// workspace path (and is not one of the backend's temporary files).
func addressable(name string) bool {
	if strings.HasPrefix(name, tmpPrefix) || len(name) > MaxSegmentBytes || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' && filepath.Separator == '\\' {
			return false
		}
	}
	return name != "." && name != ".." && !edgeSpace(name)
}

// entryPath returns the workspace path of the entry name of the directory
// dir, and whether the workspace can name it (see addressable; and not
// deeper than MaxSegments).
func entryPath(dir, name string) (string, bool) {
	if !addressable(name) {
		return "", false
	}
	p := join(dir, name)
	return p, strings.Count(p, "/")+1 <= MaxSegments
}

// entryInfo describes a directory entry, following a symbolic link only
// where it stays inside the root. ok is false for entries the workspace
// does not show: escaping or dangling links, names it cannot address.
func (s *diskStore) entryInfo(dir string, e fs.DirEntry) (info Info, link, ok bool) {
	p, ok := entryPath(dir, e.Name())
	if !ok {
		return Info{}, false, false
	}
	var fi fs.FileInfo
	var err error
	if e.Type()&fs.ModeSymlink != 0 {
		link = true
		fi, err = s.root.Stat(osName(p))
	} else {
		fi, err = e.Info()
	}
	if err != nil {
		return Info{}, false, false
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return Info{Path: p, Dir: true}, link, true
	case m.IsRegular():
		return Info{Path: p, Size: fi.Size()}, link, true
	default:
		return Info{Path: p, Special: specialKind(m)}, link, true
	}
}

func (s *diskStore) list(p string) ([]Info, error) {
	entries, err := s.readDir(p)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	for _, e := range entries {
		if info, link, ok := s.entryInfo(p, e); ok {
			info.Link = link
			out = append(out, info)
		}
	}
	return out, nil
}

// walk visits directories and regular files depth-first in name order,
// which is path order. It does not visit symbolic links to directories, so
// a link cannot make it loop. It opens each directory from its parent's
// (openSub), so that neither the listing nor a search's open of a file
// (Info.open) resolves the path from the workspace root again, component
// by component; workers list the directories ahead of fn (see walkTree).
func (s *diskStore) walk(dir string, fn func(Info) error) error {
	return s.walkTree(dir, walkOpts{sizes: true, opens: true}, fn)
}

// scan is walk without the sizes of files: an entry whose type the
// listing gave is not stat'ed.
func (s *diskStore) scan(dir string, fn func(Info) error) error {
	return s.walkTree(dir, walkOpts{opens: true}, fn)
}

// What a path holds, for the undo journal.

type stateKind int

const (
	kindAbsent stateKind = iota
	kindFile
	kindDir
	kindLink
)

// state is what a path held: nothing, a file (content and mode, or its
// hash only when recording what the call left), a directory or a symbolic
// link.
type state struct {
	kind   stateKind
	data   []byte
	mode   fs.FileMode
	hash   string
	target string
}

// current reads the state of p without following a final symbolic link;
// with content, a file's bytes, otherwise only their hash.
func (s *diskStore) current(p string, content bool) (state, error) {
	fi, err := s.root.Lstat(osName(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state{kind: kindAbsent}, nil
	case err != nil:
		return state{}, diskErr(err)
	case fi.IsDir():
		return state{kind: kindDir, mode: fi.Mode().Perm()}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := s.root.Readlink(osName(p))
		if err != nil {
			return state{}, diskErr(err)
		}
		return state{kind: kindLink, target: target}, nil
	case !fi.Mode().IsRegular():
		return state{}, &specialError{kind: specialKind(fi.Mode())}
	}
	st := state{kind: kindFile, mode: fi.Mode().Perm()}
	if !content {
		v, _, err := s.version(p)
		st.hash = v
		return st, err
	}
	data, err := s.readFile(p, 0)
	if err != nil {
		return state{}, err
	}
	st.data, st.hash = data, hashVersion(data)
	return st, nil
}

func (s *diskStore) snapshot() (undo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && s.c.inTx {
		// A transaction nobody ended: what it did stays.
		_ = s.endLocked(s.c)
	}
	if s.c == nil {
		s.c = newTxn("")
	}
	s.c.inTx = true
	return diskUndo{s: s, t: s.c}, nil
}

type diskUndo struct {
	s *diskStore
	t *txn
}

// release commits the call: its journal is removed, then its locks.
func (u diskUndo) release() {
	if err := u.s.end(u.t); err != nil {
		u.s.b.logger.Error("workspace: ending a call", "err", err)
	}
}

// restore puts every path the call changed back as it was, newest change
// first, from the journal; then the journal and the locks go. A path that
// someone else changed since the call touched it is left alone and
// reported: undoing the call must not undo another's work.
func (u diskUndo) restore() error {
	err := u.s.rollback(u.t)
	return errors.Join(err, u.s.end(u.t))
}

func sameState(a, b state) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindFile:
		return a.hash == b.hash
	case kindLink:
		return a.target == b.target
	}
	return true
}
