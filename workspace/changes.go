package workspace

import (
	"bytes"
	"errors"
	"maps"
	"slices"

	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/session"
)

// What a call changed, for a dry run's diff and for the session's history
// (session.Changer), and how a restore of the session puts the disk
// workspace's files back (session.Files).

// Changes implements session.Changer: the files the call changed so far.
func (r restorer) Changes() ([]session.FileChange, error) { return r.u.changes() }

// track is what a memory store's call changed since its snapshot: the
// paths its changes named, and the tree they left (nil once the call
// ended).
type track struct {
	paths map[string]bool
	tree  *node
}

// set makes t the store's tree, after a change at paths.
func (s *memStore) set(t *node, paths ...string) {
	s.t.Store(t)
	if tr := s.track; tr != nil {
		for _, p := range paths {
			tr.paths[p] = true
		}
		tr.tree = t
	}
}

// changes compares the tree of the snapshot with the current one,
// descending only where their nodes differ, and only at the paths the
// call changed: its cost is that of the change, not of the directories
// the change is in. When the tree was replaced otherwise since (a
// restore of the session decodes a whole tree), it compares the trees
// from their roots.
func (u memUndo) changes() (out []session.FileChange, err error) {
	defer merkle.Recover(&err)
	cur := u.s.t.Load()
	if u.track == nil || u.s.track != u.track || u.track.tree != cur {
		err = diffNodes("", u.t, cur, &out)
		return out, err
	}
	paths := slices.SortedFunc(maps.Keys(u.track.paths), comparePaths)
	var last string
	for i, p := range paths {
		if i > 0 && (p == last || isUnder(p, last)) {
			continue // within one compared already
		}
		last = p
		a, _ := lookup(u.t, p)
		b, _ := lookup(cur, p)
		if err := diffNodes(p, a, b, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// isUnder reports whether path p is under the directory dir ("" is the
// root).
func isUnder(p, dir string) bool {
	return dir == "" || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// diffNodes appends to out the files that differ between a and b (either
// nil for nothing), the nodes at path p.
func diffNodes(p string, a, b *node, out *[]session.FileChange) error {
	switch {
	case a == b:
		return nil
	case a != nil && b != nil && a.dir && b.dir:
		// The names in the parts of either directory that the other
		// does not share: a large directory's unchanged parts are not
		// visited.
		names := map[string]bool{}
		ak, bk := a.children(), b.children()
		for name := range ak.Changed(&bk) {
			names[name] = true
		}
		for name := range bk.Changed(&ak) {
			names[name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			ka, _ := ak.Get(name)
			kb, _ := bk.Get(name)
			if err := diffNodes(join(p, name), ka, kb, out); err != nil {
				return err
			}
		}
		return nil
	case a != nil && b != nil && !a.dir && !b.dir:
		before, err := a.file.bytes()
		if err != nil {
			return err
		}
		after, err := b.file.bytes()
		if err != nil || bytes.Equal(before, after) {
			return err
		}
		*out = append(*out, session.FileChange{Path: p, Before: before, After: after, Existed: true, Exists: true})
		return nil
	}
	// Added, removed, or a file where a directory was (or the reverse).
	var files []session.FileChange
	collect := func(n *node, after bool) error {
		if n == nil {
			return nil
		}
		add := func(q string, f *node) error {
			data, err := f.file.bytes()
			c := session.FileChange{Path: q, Before: data, Existed: true}
			if after {
				c = session.FileChange{Path: q, After: data, Exists: true}
			}
			files = append(files, c)
			return err
		}
		if !n.dir {
			return add(p, n)
		}
		return n.walk(p, func(q string, f *node) error {
			if f.dir {
				return nil
			}
			return add(q, f)
		})
	}
	if err := errors.Join(collect(a, false), collect(b, true)); err != nil {
		return err
	}
	slices.SortStableFunc(files, func(x, y session.FileChange) int { return comparePaths(x.Path, y.Path) })
	*out = append(*out, files...)
	return nil
}

// changes reads the files the call changed: what each held before, from
// the journal, and what it holds now; and the directories it made or
// removed. Symbolic links, and a file that became a directory or the
// reverse, are left out.
func (u diskUndo) changes() ([]session.FileChange, error) {
	t := u.t
	if t.journal == nil {
		return nil, nil
	}
	recs, err := readRecords(t.journal)
	if err != nil {
		return nil, err
	}
	before := map[string]state{}
	for _, r := range recs {
		switch _, seen := before[r.path]; {
		case r.typ == recBefore && !seen:
			before[r.path] = r.st
		case r.typ == recUntouched:
			delete(before, r.path)
		}
	}
	var out []session.FileChange
	for _, p := range slices.SortedFunc(maps.Keys(before), comparePaths) {
		b := before[p]
		a, err := u.s.current(p, true)
		if err != nil {
			return nil, err
		}
		if isDirOrAbsent(b) && isDirOrAbsent(a) && a.kind != b.kind {
			out = append(out, session.FileChange{Path: p, Dir: true, Existed: b.kind == kindDir, Exists: a.kind == kindDir, Outside: true})
		}
		if !isFileOrAbsent(b) || !isFileOrAbsent(a) || a.kind == b.kind && bytes.Equal(a.data, b.data) {
			continue
		}
		out = append(out, session.FileChange{
			Path: p, Before: b.data, After: a.data,
			Existed: b.kind == kindFile, Exists: a.kind == kindFile, Outside: true,
		})
	}
	return out, nil
}

func isFileOrAbsent(st state) bool { return st.kind == kindFile || st.kind == kindAbsent }

func isDirOrAbsent(st state) bool { return st.kind == kindDir || st.kind == kindAbsent }

// File implements session.Files: the content of the file at path (a
// normalised path), whether one is there, or whether a directory is.
func (w *Workspace) File(path string) ([]byte, bool, bool, error) {
	data, err := w.st.readFile(path, 0)
	switch {
	case errors.Is(err, errNotExist), errors.Is(err, errNotDir):
		return nil, false, false, nil
	case errors.Is(err, errIsDir):
		return nil, false, true, nil
	case err != nil:
		return nil, false, false, err
	}
	return data, true, false, nil
}

// PutFile implements session.Files: the file at path holds data, or is
// removed when exists is false, as a change of the current call.
func (w *Workspace) PutFile(path string, data []byte, exists bool) error {
	if exists {
		return w.st.writeFile(path, data)
	}
	_, err := w.st.remove(path)
	if errors.Is(err, errNotExist) {
		return nil
	}
	return err
}

// PutDir implements session.Files: the directory at path is made, with
// its parents, or removed when exists is false and it is empty, as a
// change of the current call.
func (w *Workspace) PutDir(path string, exists bool) error {
	if !exists {
		if entries, err := w.st.list(path); err != nil || len(entries) > 0 {
			return err
		}
		_, err := w.st.remove(path)
		return err
	}
	d, ok := w.st.(*diskStore)
	if !ok {
		return errors.New("the memory workspace is put back with the session's state")
	}
	return d.withTxn(func(t *txn) error {
		_, err := d.makeDirs(t, append(ancestors(path), path))
		return err
	})
}
