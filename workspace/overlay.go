package workspace

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/wink-mcp/wink-mcp/session"
)

// What a reader outside the calls sees of a disk workspace: the directory
// as the last commit left it. A call writes its files in place, and its
// undo journal keeps what each path held before the call first changed
// it; a reader reads the directory, then the journals of the calls in
// flight, in any process on the same state directory, and answers for
// each path a journal holds what it held before. A change is journaled
// before it is made, so a journal read after the directory holds every
// change the read saw. A call that is put back and whose journal goes
// between the two reads leaves no journal to read: each put back counts
// itself first (countRollback), and a read that a put back overlapped
// reads again.

// rollbacksSuffix ends the name of the file beside a workspace's
// directory in the state directory (in journal/) whose length counts the
// calls put back there, modulo maxRollbackMarks.
const rollbacksSuffix = ".rollbacks"

// maxRollbackMarks is the length at which the count of calls put back
// starts again from zero.
const maxRollbackMarks = 64 << 10

// maxReadTries is how many times a reader reads again while calls are put
// back under it before it gives up.
const maxReadTries = 5

// errPutBack is the error of a read that calls put back kept overlapping.
var errPutBack = errors.New("calls were being put back while the workspace was read; try again")

// rollbacksName returns the file that counts the calls put back in b.
func (b *diskBackend) rollbacksName() string { return b.state + rollbacksSuffix }

// countRollback counts one call put back (whole, or one of its paths),
// after its paths are back and before its journal goes or another call
// takes the path. Its cost is one append, on the path of a failed call
// only.
func (b *diskBackend) countRollback() {
	f, err := os.OpenFile(b.rollbacksName(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		if fi, serr := f.Stat(); serr == nil && fi.Size() >= maxRollbackMarks {
			_ = f.Truncate(0)
		}
		_, err = f.Write([]byte{'.'})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		b.logger.Warn("workspace: counting a call put back, which readers compare", "err", err)
	}
}

// rollbacks returns the count of calls put back (see countRollback).
func (b *diskBackend) rollbacks() (int64, error) {
	fi, err := os.Stat(b.rollbacksName())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return fi.Size(), nil
}

// journalCache holds what readers have read of the journals of a
// backend's state directory, each as far as it was written, so that a
// journal is read once, as it grows, whatever the number of reads. It
// holds no journal open: a journal that goes frees its space at once.
type journalCache struct {
	mu      sync.Mutex
	indexes map[string]*journalIndex
}

// journalIndex is what a reader knows of one journal: for each path the
// call changed, what it held before.
type journalIndex struct {
	id    string
	off   int64 // the end of the last whole record read
	paths map[string]*before
}

// before is what a path held before the call of a journal first changed
// it; a file's content is left in the journal, at at.
type before struct {
	kind    stateKind
	target  string
	size    int64
	at      int64
	journal string
	// locked: the call locked the path (it changed more than a directory
	// there), so its lock file names the journal while the call owns it.
	locked bool
}

// advance reads, from f, the records written since the last read: up to
// a torn or half-written last record, which is read again next time.
func (j *journalIndex) advance(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	end := fi.Size()
	var head [8]byte
	for j.off+8 <= end {
		if _, err := f.ReadAt(head[:], j.off); err != nil {
			return err
		}
		n := int64(binary.LittleEndian.Uint32(head[:]))
		if j.off+8+n > end {
			return nil
		}
		payload := make([]byte, n)
		if _, err := f.ReadAt(payload, j.off+8); err != nil {
			return err
		}
		rec, ok := decodeRecord(payload)
		if !ok || crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(head[4:]) {
			return nil
		}
		switch e := j.paths[rec.path]; {
		case rec.typ == recBefore && e == nil:
			j.paths[rec.path] = &before{kind: rec.st.kind, target: rec.st.target, size: int64(len(rec.st.data)),
				at: j.off + 8 + n - int64(len(rec.st.data)), journal: j.id}
		case rec.typ == recIntent && e != nil && rec.st.kind != kindDir:
			e.locked = true
		case rec.typ == recUntouched:
			delete(j.paths, rec.path)
		}
		j.off += 8 + n
	}
	return nil
}

// live reports whether the process that writes the journal holds it.
func (j *journalIndex) live(state string) bool {
	f, err := os.Open(filepath.Join(state, j.id+journalSuffix))
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := tryFlock(f)
	return err != nil || !ok
}

// owns reports whether the journal still governs p, a path it locked: a
// dead call's path that another call has locked since was put back then,
// and is that call's now.
func (j *journalIndex) owns(state, p string) bool {
	mark, err := os.ReadFile(lockName(state, p))
	return err == nil && string(mark) == j.id
}

// overlay is what the calls in flight changed: for each path, what it
// held before the first of them changed it; and their journals, open
// until the read that asked is over (close).
type overlay struct {
	paths    map[string]*before
	journals map[string]*os.File
}

// close closes the journals of o (nil: none).
func (o *overlay) close() {
	if o == nil {
		return
	}
	for _, f := range o.journals {
		f.Close()
	}
}

// content reads the content of a file, as e says it was, from its
// journal.
func (o *overlay) content(e *before) ([]byte, error) {
	buf := make([]byte, e.size)
	if _, err := o.journals[e.journal].ReadAt(buf, e.at); err != nil {
		return nil, fmt.Errorf("journal %s: %w", e.journal, err)
	}
	return buf, nil
}

// inFlight reads the journals of the calls in flight in the state
// directory: nil when there are none; the caller closes the overlay. A
// dead process's journal counts until it is put back, except the paths
// that another call has locked since.
func (b *diskBackend) inFlight() (_ *overlay, err error) {
	d, err := os.Open(b.state)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, journalSuffix); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	c := &b.journals
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.indexes {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(c.indexes, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	o := &overlay{paths: map[string]*before{}, journals: map[string]*os.File{}}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	for _, id := range ids {
		f, err := os.Open(filepath.Join(b.state, id+journalSuffix))
		if errors.Is(err, fs.ErrNotExist) {
			continue // ended since the listing
		}
		if err != nil {
			return nil, err
		}
		o.journals[id] = f
		j := c.indexes[id]
		if j == nil {
			j = &journalIndex{id: id, paths: map[string]*before{}}
			if c.indexes == nil {
				c.indexes = map[string]*journalIndex{}
			}
			c.indexes[id] = j
		}
		if err := j.advance(f); err != nil {
			return nil, fmt.Errorf("journal %s: %w", id, err)
		}
		dead := len(j.paths) > 0 && !j.live(b.state)
		for p, e := range j.paths {
			if _, ok := o.paths[p]; ok || dead && e.locked && !j.owns(b.state, p) {
				continue
			}
			o.paths[p] = e
		}
	}
	return o, nil
}

// at returns what the last commit left at p, when the calls in flight
// changed p or put a directory where a file above it was (ok): e, or
// err, errNotExist or a *parentError, when nothing or a file was there.
// A path below a directory that a call in flight made is not hidden for
// that: the call journals every path it makes, so one it did not is
// another's (a committed call's, which the call's restore leaves).
func (o *overlay) at(p string) (e *before, ok bool, err error) {
	for _, a := range ancestors(p) {
		if e := o.paths[a]; e != nil && e.kind == kindFile {
			return nil, true, &parentError{path: a}
		}
	}
	if e := o.paths[p]; e != nil {
		if e.kind == kindAbsent {
			return nil, true, errNotExist
		}
		return e, true, nil
	}
	return nil, false, nil
}

// under reports whether the calls in flight changed a path above p: a
// "not a directory" of the directory about p then means that p was not
// there.
func (o *overlay) under(p string) bool {
	return slices.ContainsFunc(ancestors(p), func(a string) bool { return o.paths[a] != nil })
}

// maxLinks is how many symbolic links the reader follows from one path.
const maxLinks = 8

// committedStore is a reader's view of a disk workspace as the last
// commit left it (see the top of this file): a store that reads, and
// refuses every change.
type committedStore struct {
	d *diskStore
}

// freeze implements freezer: the workspace as the last commit left it,
// for a reader outside the calls.
func (s *diskStore) freeze() store {
	return &committedStore{d: &diskStore{b: s.b, root: s.root}}
}

// settle runs read, which reads the directory and then the overlay of
// the calls in flight (in that order), again while calls were put back
// meanwhile: their journals, gone, may have held what the read saw.
func settle[T any](c *committedStore, read func() (T, error)) (T, error) {
	for try := 1; ; try++ {
		n, err := c.d.b.rollbacks()
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := read()
		m, merr := c.d.b.rollbacks()
		switch {
		case merr != nil:
			return v, merr
		case m == n:
			return v, err
		case try == maxReadTries:
			return v, errPutBack
		}
	}
}

// info describes e, what p held, as stat does.
func (c *committedStore) info(o *overlay, p string, e *before, links int) (Info, error) {
	switch e.kind {
	case kindDir:
		return Info{Path: p, Dir: true}, nil
	case kindFile:
		return Info{Path: p, Size: e.size}, nil
	}
	t, err := c.follow(p, e, links)
	if err != nil {
		return Info{}, err
	}
	in, err := c.statIn(o, t, links+1)
	if err != nil {
		return Info{}, err
	}
	in.Path, in.Link = p, true
	return in, nil
}

// follow returns the path a symbolic link at p, as e was, points to.
func (c *committedStore) follow(p string, e *before, links int) (string, error) {
	if links >= maxLinks || filepath.IsAbs(e.target) {
		return "", errEscapes
	}
	t := path.Clean(join(parent(p), filepath.ToSlash(e.target)))
	switch {
	case t == ".":
		return "", nil
	case t == "..", strings.HasPrefix(t, "../"):
		return "", errEscapes
	}
	return t, nil
}

// statIn is stat of p through o, reading the directory where o does not
// say (a link's target: after o was read).
func (c *committedStore) statIn(o *overlay, p string, links int) (Info, error) {
	if e, ok, err := o.at(p); ok {
		if err != nil {
			return Info{}, err
		}
		return c.info(o, p, e, links)
	}
	return c.d.stat(p)
}

func (c *committedStore) stat(p string) (Info, error) {
	if p == "" {
		return Info{Dir: true}, nil
	}
	return c.describe(p, c.d.stat)
}

func (c *committedStore) lstat(p string) (Info, error) { return c.describe(p, c.d.lstat) }

// describe is stat or lstat of p: the directory's (disk), unless the
// calls in flight changed p (see overlay.at).
func (c *committedStore) describe(p string, disk func(string) (Info, error)) (Info, error) {
	return settle(c, func() (Info, error) {
		in, derr := disk(p)
		o, err := c.d.b.inFlight()
		defer o.close()
		if err != nil || o == nil {
			return in, cmp.Or(err, derr)
		}
		if e, ok, err := o.at(p); ok {
			if err != nil {
				return Info{}, err
			}
			return c.info(o, p, e, 0)
		}
		if derr != nil && o.under(p) && errors.Is(derr, errNotDir) {
			return Info{}, errNotExist
		}
		return in, derr
	})
}

func (c *committedStore) readFile(p string, max int64) ([]byte, error) {
	return settle(c, func() ([]byte, error) {
		data, derr := c.d.readFile(p, max)
		o, err := c.d.b.inFlight()
		defer o.close()
		if err != nil || o == nil {
			return data, cmp.Or(err, derr)
		}
		return c.readIn(o, p, max, data, derr, 0)
	})
}

// readIn is readFile of p through o, given what the directory held
// (data, derr), read before o.
func (c *committedStore) readIn(o *overlay, p string, max int64, data []byte, derr error, links int) ([]byte, error) {
	e, ok, err := o.at(p)
	switch {
	case !ok && derr != nil && o.under(p) && errors.Is(derr, errNotDir):
		return nil, errNotExist
	case !ok:
		return data, derr
	case err != nil:
		return nil, err
	case e.kind == kindDir:
		return nil, errIsDir
	case e.kind == kindLink:
		t, err := c.follow(p, e, links)
		if err != nil {
			return nil, err
		}
		if t == "" {
			return nil, errIsDir
		}
		data, derr := c.d.readFile(t, max)
		return c.readIn(o, t, max, data, derr, links+1)
	case max > 0 && e.size > max:
		return nil, errTooLarge
	}
	return o.content(e)
}

func (c *committedStore) version(p string) (string, bool, error) {
	data, err := c.readFile(p, 0)
	switch {
	case unversioned(err):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return hashVersion(data), true, nil
}

func (c *committedStore) list(p string) ([]Info, error) {
	return settle(c, func() ([]Info, error) {
		infos, derr := c.d.list(p)
		o, err := c.d.b.inFlight()
		defer o.close()
		if err != nil || o == nil {
			return infos, cmp.Or(err, derr)
		}
		if gone, err := o.dirGone(p, derr); err != nil {
			return nil, err
		} else if gone {
			infos, derr = []Info{}, nil
		}
		if derr != nil {
			if o.under(p) && errors.Is(derr, errNotDir) {
				return nil, errNotExist
			}
			return nil, derr
		}
		out, seen := c.overlaid(o, infos, false)
		for q, e := range o.paths {
			if seen[q] || q == "" || parent(q) != p || e.kind == kindAbsent {
				continue
			}
			if in, err := c.info(o, q, e, 0); err == nil {
				out = append(out, in)
			}
		}
		slices.SortFunc(out, func(a, b Info) int { return comparePaths(a.Path, b.Path) })
		return out, nil
	})
}

func (c *committedStore) walk(dir string, fn func(Info) error) error {
	return c.walkDir(dir, c.d.walk, fn)
}

func (c *committedStore) scan(dir string, fn func(Info) error) error {
	return c.walkDir(dir, c.d.scan, fn)
}

// walkDir is walk over the directory's walk or scan. It gives fn each
// directory of the directory as the walk finds it, so that fn's
// fs.SkipDir spares the walk what it leaves out; it gathers the files,
// reads the overlay, and then gives fn, in path order, the files and the
// directories that the calls in flight removed, as the last commit left
// them. Every directory comes before what it holds. A file it gives fn
// opens as readFile reads it.
func (c *committedStore) walkDir(dir string, walk func(string, func(Info) error) error, fn func(Info) error) error {
	var given map[string]bool // the directories given to fn, and not skipped
	// ignored are the directories whose .gitignore a call in flight
	// removed: fn is told to read it (Info.noIgnoreFile), as it was.
	ignored := map[string]bool{}
	entries, err := settle(c, func() ([]Info, error) {
		for {
			entries, again, err := c.gather(dir, walk, fn, &given, ignored)
			if !again {
				return entries, err
			}
		}
	})
	if err != nil {
		return err
	}
	// Only what lies in a directory given to fn: neither what a link to a
	// directory holds nor what fn skipped.
	for _, in := range entries {
		if !given[parent(in.Path)] {
			continue
		}
		if !in.Dir {
			p := in.Path
			in.open = func() (opened, error) {
				data, err := c.readFile(p, 0)
				return bytesFile(data), err
			}
		}
		if err := fn(in); err != nil {
			if in.Dir && errors.Is(err, fs.SkipDir) {
				continue
			}
			return err
		}
		if in.Dir {
			given[in.Path] = true
		}
	}
	return nil
}

// gather is one try of walkDir: the walk of the directory, which gives
// fn the directories (those of ignored as holding a .gitignore) and sets
// *given, then the overlay, and the files and the directories that the
// calls in flight removed, merged, in path order. again says to try
// again: the overlay holds a .gitignore of a directory given to fn as
// holding none, which is now in ignored.
func (c *committedStore) gather(dir string, walk func(string, func(Info) error) error, fn func(Info) error, given *map[string]bool, ignored map[string]bool) (_ []Info, again bool, _ error) {
	*given = map[string]bool{dir: true}
	bare := map[string]bool{} // the directories given to fn as holding no .gitignore
	var files []Info
	var fnErr error
	derr := walk(dir, func(in Info) error {
		if !in.Dir {
			in.open, in.retain = nil, nil
			files = append(files, in)
			return nil
		}
		switch {
		case ignored[in.Path]:
			in.noIgnoreFile = false
		case !in.noIgnoreFile:
			// Not every walk says: fn would read every directory's
			// .gitignore through the view, each read a look at the
			// calls in flight.
			_, err := c.d.root.Lstat(osName(join(in.Path, ignoreFile)))
			in.noIgnoreFile = errors.Is(err, fs.ErrNotExist)
		}
		err := fn(in)
		switch {
		case err == nil:
			(*given)[in.Path] = true
			if in.noIgnoreFile {
				bare[in.Path] = true
			}
		case !errors.Is(err, fs.SkipDir):
			fnErr = err
		}
		return err
	})
	if fnErr != nil {
		return nil, false, fnErr
	}
	o, err := c.d.b.inFlight()
	if err != nil {
		return nil, false, err
	}
	defer o.close()
	if o == nil {
		return files, false, derr
	}
	for q, e := range o.paths {
		if base(q) == ignoreFile && e.kind != kindAbsent && bare[parent(q)] {
			ignored[parent(q)], again = true, true
		}
	}
	if again {
		return nil, true, nil
	}
	if dir != "" {
		if gone, err := o.dirGone(dir, derr); err != nil {
			return nil, false, err
		} else if gone {
			derr = nil
		}
	}
	if derr != nil {
		return nil, false, derr
	}
	out, seen := c.overlaid(o, files, true)
	for q, e := range o.paths {
		if seen[q] || q == dir || !within(q, dir) || e.kind == kindAbsent || e.kind == kindDir && (*given)[q] {
			continue
		}
		if _, _, err := o.at(q); err != nil {
			continue
		}
		if in, err := c.info(o, q, e, 0); err == nil && !(in.Link && in.Dir) && in.Special == "" {
			if in.Dir {
				// A directory the calls removed: they journaled its
				// .gitignore if it had one.
				g := o.paths[join(q, ignoreFile)]
				in.noIgnoreFile = g == nil || g.kind == kindAbsent
			}
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return comparePaths(a.Path, b.Path) })
	return out, false, nil
}

// dirGone reports whether the calls in flight removed or moved the
// directory p, whose listing failed with derr (nil if it did not): its
// listing is then the journal's. It fails with errNotDir where they
// replaced a file at p, whose journal says what p was.
func (o *overlay) dirGone(p string, derr error) (bool, error) {
	e, ok, err := o.at(p)
	switch {
	case !ok:
		return false, nil
	case err != nil:
		return false, err
	case e.kind == kindFile:
		return false, errNotDir
	}
	return e.kind == kindDir && derr != nil, nil
}

// overlaid returns infos, entries of the directory as it is, each as the
// last commit left it where a call in flight journaled it (left out if
// that cannot be read, and, with noDirLinks, if it was a link to a
// directory), and the paths of infos.
func (c *committedStore) overlaid(o *overlay, infos []Info, noDirLinks bool) (out []Info, seen map[string]bool) {
	out, seen = make([]Info, 0, len(infos)), make(map[string]bool, len(infos))
	for _, in := range infos {
		seen[in.Path] = true
		if e, ok, err := o.at(in.Path); ok {
			if err != nil {
				continue
			}
			if in, err = c.info(o, in.Path, e, 0); err != nil || noDirLinks && in.Link && in.Dir {
				continue
			}
		}
		out = append(out, in)
	}
	return out, seen
}

// bytesFile is a file read whole, opened.
type bytesFile []byte

func (b bytesFile) read(_ *[]byte, max int64) ([]byte, error) {
	if max > 0 && int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// A committed view is read-only.

func (c *committedStore) writeFile(string, []byte) error { return session.ErrView }
func (c *committedStore) mkdir(string) (bool, error)     { return false, session.ErrView }
func (c *committedStore) move(string, string) error      { return session.ErrView }
func (c *committedStore) remove(string) (int, error)     { return 0, session.ErrView }
func (c *committedStore) snapshot() (undo, error)        { return nil, session.ErrView }
func (c *committedStore) lock(_ context.Context, _ string, _ []string) (func(), error) {
	return nil, session.ErrView
}
