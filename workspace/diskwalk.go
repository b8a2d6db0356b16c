package workspace

import (
	"container/heap"
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// walkAhead bounds how many directories a disk walk holds listed ahead of
// its caller (a descriptor each on Linux, two elsewhere, and their
// entries).
const walkAhead = 64

// diskWalk is one walk of a disk tree: its caller visits the entries in
// path order, while a worker per processor lists the directories it will
// reach next (open, getdents, sort, and, when it honours them, the ignore
// rules of each entry at its own name), never entering one the rules leave
// out. The caller lists a directory itself when it gets there first.
type diskWalk struct {
	s *diskStore
	walkOpts
	ignore bool

	mu      sync.Mutex
	wake    *sync.Cond
	pending walkQueue             // directories not yet listed, in path order
	ahead   int                   // directories listed, or being listed, not yet taken
	untaken map[*walkDir]struct{} // listed, not taken: released at the end
	stop    bool
}

// walkDir is a directory of a walk.
type walkDir struct {
	path   string
	name   string     // in its parent
	parent *dirHandle // held until listed; nil for the walk's top
	up     *walkDir
	rules  ignoreRules // of its parent
	state  walkState
	skip   bool // the caller skipped it: its subdirectories are not listed
	done   chan struct{}

	// Set by the lister, read after done.
	d       *dirHandle
	entries []walkEntry
	err     error
}

type walkState uint8

const (
	walkPending walkState = iota
	walkListing
	walkListed
	walkTaken
)

// walkEntry is an entry a listing keeps: a directory's sub is its walkDir.
type walkEntry struct {
	info Info
	name string
	link bool
	sub  *walkDir
}

// walkOpts say what a walk gives and leaves out.
type walkOpts struct {
	// sizes: the sizes of files (a stat each); opens: Info.open and
	// Info.retain for files.
	sizes, opens bool
	// rules, when set, are the ignore rules of the walk's directory's
	// parent: the walk leaves out what they, and the .gitignore files it
	// finds, the directory's own included, skip.
	rules *ignoreRules
}

// walkTree calls fn for every directory and file under dir, in path order,
// as walk does, with what o asks.
func (s *diskStore) walkTree(dir string, o walkOpts, fn func(Info) error) error {
	w := &diskWalk{s: s, walkOpts: o, ignore: o.rules != nil, untaken: map[*walkDir]struct{}{}}
	w.wake = sync.NewCond(&w.mu)
	top := &walkDir{path: dir, done: make(chan struct{})}
	if o.rules != nil {
		top.rules = *o.rules
	}
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(w.work)
	}
	defer func() {
		w.mu.Lock()
		w.stop = true
		w.wake.Broadcast()
		w.mu.Unlock()
		wg.Wait()
		w.release()
	}()
	w.take(top)
	if top.err != nil {
		return s.pathErr(dir, top.err)
	}
	return w.walkIn(top, fn)
}

// work lists pending directories, the first in path order first, while
// fewer than walkAhead wait for the caller.
func (w *diskWalk) work() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for !w.stop && (len(w.pending) == 0 || w.ahead >= walkAhead) {
			w.wake.Wait()
		}
		if w.stop {
			return
		}
		t := heap.Pop(&w.pending).(*walkDir)
		if t.state != walkPending {
			continue // the caller listed it
		}
		w.listIt(t)
	}
}

// listIt lists t, pending, with w.mu held, and releases it while it
// reads.
func (w *diskWalk) listIt(t *walkDir) {
	t.state = walkListing
	w.ahead++
	w.mu.Unlock()
	w.list(t)
	w.mu.Lock()
	t.state = walkListed
	w.untaken[t] = struct{}{}
	if t.err == nil && !t.skipped() {
		for i := range t.entries {
			if sub := t.entries[i].sub; sub != nil {
				t.d.refs.Add(1) // sub.parent
				heap.Push(&w.pending, sub)
			}
		}
		w.wake.Broadcast()
	}
	close(t.done)
}

// skipped reports whether t or a directory above it was skipped; w.mu is
// held.
func (t *walkDir) skipped() bool {
	for ; t != nil; t = t.up {
		if t.skip {
			return true
		}
	}
	return false
}

// take waits until t is listed, listing it if no worker has started, and
// hands it to the caller, who releases t.d.
func (w *diskWalk) take(t *walkDir) {
	w.mu.Lock()
	switch t.state {
	case walkPending:
		w.listIt(t)
	case walkListing:
		w.mu.Unlock()
		<-t.done
		w.mu.Lock()
	}
	t.state = walkTaken
	delete(w.untaken, t)
	w.ahead--
	w.wake.Signal()
	w.mu.Unlock()
}

// release closes, once the workers have stopped, what the caller never
// took: the directories listed ahead, and the parents pending ones hold.
func (w *diskWalk) release() {
	for t := range w.untaken {
		if t.d != nil {
			t.d.release()
		}
	}
	for _, t := range w.pending {
		if t.state == walkPending && t.parent != nil {
			t.parent.release()
		}
	}
}

// list opens and lists t, and keeps its entries: those the workspace can
// name and show (no special files, no links to directories), and, when
// the walk honours ignore rules, not left out by them.
func (w *diskWalk) list(t *walkDir) {
	var entries []fs.DirEntry
	var err error
	if t.parent == nil {
		t.d, entries, err = openTop(w.s.root, osName(t.path))
	} else {
		t.d, entries, err = t.parent.openSub(t.name)
		t.parent.release()
		t.parent = nil
	}
	if err != nil {
		t.err = err
		return
	}
	rules := t.rules
	if w.ignore {
		if i, has := slices.BinarySearchFunc(entries, ignoreFile, func(e fs.DirEntry, name string) int { return strings.Compare(e.Name(), name) }); has {
			if data := w.readIgnoreFile(t, entries[i]); len(data) > 0 {
				rules = rules.with(t.path, data)
			}
		}
	}
	t.entries = make([]walkEntry, 0, len(entries))
	depth := 1 // of the entries
	if t.path != "" {
		depth = strings.Count(t.path, "/") + 2
	}
	for _, e := range entries {
		var info Info
		var link, ok bool
		if de, typed := e.(*dirent); !w.sizes && typed && (de.typ == 0 || de.typ == fs.ModeDir) {
			if ok = depth <= MaxSegments && plainAddressable(de.name); ok {
				info = Info{Path: join(t.path, de.name), Dir: de.typ == fs.ModeDir}
			}
		} else {
			info, link, ok = w.s.entryInfo(t.path, e)
		}
		switch {
		case !ok, info.Dir && link, info.Special != "":
			continue
		case w.ignore && rules.skips(info.Path, info.Dir):
			continue
		}
		name := info.Path[len(info.Path)-len(e.Name()):]
		we := walkEntry{info: info, name: name, link: link}
		if info.Dir {
			we.sub = &walkDir{path: info.Path, name: name, parent: t.d, up: t, rules: rules, done: make(chan struct{})}
		}
		t.entries = append(t.entries, we)
	}
}

// plainAddressable is addressable, quicker for a name of printable ASCII
// bytes but space and backslash, the usual one.
func plainAddressable(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return addressable(name)
		}
	}
	return name != "" && len(name) <= MaxSegmentBytes && !strings.HasPrefix(name, tmpPrefix) && name != "." && name != ".."
}

// readIgnoreFile reads the .gitignore file e of the directory t, as
// rulesAt does: a link is followed inside the root; nothing when it is
// not a regular file or cannot be read.
func (w *diskWalk) readIgnoreFile(t *walkDir, e fs.DirEntry) []byte {
	if e.Type()&fs.ModeSymlink != 0 {
		data, _ := w.s.readFile(join(t.path, ignoreFile), maxIgnoreFile)
		return data
	}
	f, err := openIn(t.d, e.Name())
	if err != nil {
		return nil
	}
	var buf []byte
	data, _ := f.read(&buf, maxIgnoreFile)
	return data
}

// walkIn calls fn for the entries of t, taken, descending into its
// directories; it releases t.d.
func (w *diskWalk) walkIn(t *walkDir, fn func(Info) error) error {
	defer func() {
		t.d.release()
		t.entries = nil // what is walked is garbage
	}()
	for i := range t.entries {
		e := &t.entries[i]
		if sub := e.sub; sub != nil {
			e.sub = nil
			w.take(sub)
			if err := sub.err; err != nil {
				if err = diskErr(err); errors.Is(err, errNotExist) || errors.Is(err, errNotDir) || errors.Is(err, errEscapes) {
					continue // gone, or swapped for something else, since the listing
				}
				return err
			}
			if err := fn(e.info); err != nil {
				w.mu.Lock()
				sub.skip = true
				w.mu.Unlock()
				sub.d.release()
				if errors.Is(err, fs.SkipDir) {
					continue
				}
				return err
			}
			if err := w.walkIn(sub, fn); err != nil && !errors.Is(err, errNotExist) {
				return err
			}
			continue
		}
		info := e.info
		switch {
		case !w.opens:
		case e.link:
			p := info.Path
			info.open = func() (opened, error) {
				f, fi, err := w.s.openRegular(p)
				if err != nil {
					return nil, err
				}
				return osFile{f: f, size: fi.Size()}, nil
			}
		default:
			d, name := t.d, e.name
			info.open = func() (opened, error) { return openIn(d, name) }
			info.retain = d.retain
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// walkQueue is a heap of directories in path order.
type walkQueue []*walkDir

func (q walkQueue) Len() int           { return len(q) }
func (q walkQueue) Less(i, j int) bool { return comparePaths(q[i].path, q[j].path) < 0 }
func (q walkQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)        { *q = append(*q, x.(*walkDir)) }
func (q *walkQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}
