package sessions

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/wink-mcp/wink-mcp/diffs"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// ErrNoCommit is the error of CommitDiff for a commit the session's
// history does not keep.
var ErrNoCommit = errors.New("the history keeps no such commit")

// CommitDiff returns what commit seq of session h's history changed, if
// owner may use the session: each STATE slice, and each file, in the state
// (an in-memory workspace) or outside it (a disk workspace, from the
// contents the history keeps). It reads the store and decodes the states
// before and after the commit into sessions of its own; the session
// itself is not touched.
func (m *Manager) CommitDiff(ctx context.Context, h, owner string, seq uint64) (diffs.Diff, error) {
	d := diffs.New()
	hd, err := m.ownedHead(ctx, h, owner)
	if err != nil {
		return d, err
	}
	hist, docs, err := m.headHistory(ctx, h, hd)
	if err != nil {
		return d, err
	}
	var c *session.HistoryCommit
	for i := range hist.Commits {
		if hist.Commits[i].Seq == seq {
			c = &hist.Commits[i]
		}
	}
	if c == nil {
		return d, ErrNoCommit
	}
	get := m.getter(ctx, h, docs)
	before, err := m.stateAt(c.Prev, get)
	if err != nil {
		return d, err
	}
	defer before.Close()
	after, err := m.stateAt(c.Root, get)
	if err != nil {
		return d, err
	}
	defer after.Close()
	changed, err := after.ChangedSlices(before.Slices(), after.Slices())
	if err != nil {
		return d, err
	}
	for _, s := range changed {
		d.AddSlice(s.Name, s.Before, s.After)
	}
	for _, f := range c.Files {
		if f.Dir {
			continue // its files say what changed
		}
		var old, cur []byte
		var existed, exists bool
		if f.Outside {
			if old, existed, err = historyContent(f.Before, f.BeforeSize, get); err == nil {
				cur, exists, err = historyContent(f.After, f.AfterSize, get)
			}
		} else {
			if old, existed, err = fileIn(before, f.Path); err == nil {
				cur, exists, err = fileIn(after, f.Path)
			}
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", f.Path, err)
		}
		d.AddFile(f.Path, existed, exists, old, cur)
	}
	return d, nil
}

// stateAt returns a fresh session holding the state whose root is root.
// The caller closes it.
func (m *Manager) stateAt(root string, get func(string) ([]byte, error)) (*session.Session, error) {
	s, err := m.registry.NewSession("diff-" + rand.Text())
	if err != nil {
		return nil, err
	}
	if _, err := statetree.DecodeRoot(s, root, get); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// fileIn returns the content of the file at path in the state of s, and
// whether it is there.
func fileIn(s *session.Session, path string) ([]byte, bool, error) {
	fs := session.FilesOf(s)
	if len(fs) != 1 {
		return nil, false, nil
	}
	data, exists, dir, err := fs[0].File(path)
	return data, exists && !dir, err
}

// historyContent returns the content a history's token names (see
// session.HistoryFile), and whether there was a file.
func historyContent(tok string, size int64, get func(string) ([]byte, error)) ([]byte, bool, error) {
	if tok == "" || tok == dirToken {
		return nil, false, nil
	}
	data, err := statetree.GetFile(tok, size, get)
	return data, err == nil, err
}

// withChanged returns d with the STATE slices that each of its records
// changed (session.HistoryCommit.State), as a person reads them
// (session.Session.ChangedSlices), found from the states before and
// after it: a commit does not name them, so that only a reader of the
// history (its resource, the console, an undo) pays for them, once for
// each record. A record that names some already (written by a build
// that named them at its commit) keeps them. docs are the root documents
// that the history of session h holds; d is not changed.
func (m *Manager) withChanged(ctx context.Context, h string, d *historyDoc, docs map[string][]byte) (*historyDoc, error) {
	get := m.getter(ctx, h, docs)
	decoded := map[string]*session.Session{}
	defer func() {
		for _, s := range decoded {
			s.Close()
		}
	}()
	state := func(root string) (*session.Session, error) {
		if s, ok := decoded[root]; ok {
			return s, nil
		}
		s, err := m.stateAt(root, get)
		if err != nil {
			return nil, err
		}
		decoded[root] = s
		return s, nil
	}
	out := d
	for i, c := range d.Commits {
		if c.State != nil {
			continue
		}
		names, ok := m.changedSlices.get(c.Prev, c.Root)
		if !ok {
			before, err := state(c.Prev)
			if err != nil {
				return nil, fmt.Errorf("reading the state before commit %d: %w", c.Seq, err)
			}
			after, err := state(c.Root)
			if err != nil {
				return nil, fmt.Errorf("reading the state after commit %d: %w", c.Seq, err)
			}
			changes, err := after.ChangedSlices(before.Slices(), after.Slices())
			if err != nil {
				return nil, err
			}
			names = nil
			for _, ch := range changes {
				names = append(names, ch.Name)
			}
			m.changedSlices.put(c.Prev, c.Root, names)
		}
		if names == nil {
			continue
		}
		if out == d {
			out = cloneHistory(d)
		}
		out.Commits[i].State = names
	}
	return out, nil
}

// changedCache holds the STATE slices that went from one state to
// another changed, by the two states' roots: what withChanged found,
// for the next reader. A root names its state's content, so that what
// it holds is never stale; it holds up to changedKept pairs, and is
// emptied when full.
type changedCache struct {
	mu    sync.Mutex
	names map[[2]string][]string
}

// changedKept is how many pairs of states a changedCache holds at most.
const changedKept = 4096

// get returns the STATE slices that went from prev to root changed, if
// the cache holds them.
func (c *changedCache) get(prev, root string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, ok := c.names[[2]string{prev, root}]
	return names, ok
}

// put keeps the STATE slices that went from prev to root changed.
func (c *changedCache) put(prev, root string, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil || len(c.names) >= changedKept {
		c.names = map[[2]string][]string{}
	}
	c.names[[2]string{prev, root}] = names
}
