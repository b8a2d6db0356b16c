package workspace

import (
	"context"
	"errors"
	"sync"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// DefaultMaxFileBytes is the largest file the tools write or read when
// Options.MaxFileBytes is zero: 32 MiB.
const DefaultMaxFileBytes = 32 << 20

// Workspace is one session's workspace: its view of the backend, and the
// snapshots that make it one more thing a transaction covers. Other
// sections reach it with From. Paths given to its methods are normalised
// first; errors for bad paths are *PathError.
type Workspace struct {
	st      store
	kind    string
	maxFile int64
	// includeIgnored turns the ignore rules off (see Config).
	includeIgnored bool
}

// view is one call's use of its session's workspace: the workspace, and
// the versions of the files the call read or wrote, which it tells the
// read-before-write policy (policy.Observer). It is a per-call resource
// (session.ProvidePerCall), so that calls that run at once (read-only
// calls do) each know what they saw themselves.
type view struct {
	*Workspace

	mu       sync.Mutex
	observed map[string]observation
}

// observation is a file as the call saw it: its content, hashed only if
// the policy asks for its version.
type observation struct {
	data   []byte
	exists bool
}

// viewKey is the per-call resource holding the view.
var viewKey = session.NewResourceKey[*view]("workspace.call")

// newView returns a call's view of the workspace of s.
func newView(s *session.Session) (*view, error) {
	w := From(s)
	if w == nil {
		return nil, errNoWorkspace
	}
	return &view{Workspace: w}, nil
}

// errNoWorkspace is the error for a session without a workspace.
var errNoWorkspace = errors.New("the session has no workspace")

// viewOf returns the view of the call of ctx.
func viewOf(ctx *tools.Context) (*view, error) { return tools.Resource(ctx, viewKey) }

// resourceKey is the per-session resource holding the Workspace.
var resourceKey = session.NewResourceKey[*Workspace]("workspace")

// From returns the session's workspace, or nil when the workspace section
// is not set up.
func From(s *session.Session) *Workspace {
	w, _ := session.Resource(s, resourceKey)
	return w
}

func newWorkspace(b *Backend, maxFile int64) (*Workspace, error) {
	st, err := b.impl.open()
	if err != nil {
		return nil, err
	}
	return &Workspace{st: st, kind: b.Kind(), maxFile: maxFile, includeIgnored: b.includeIgnored}, nil
}

// Backend returns "memory" or "disk".
func (w *Workspace) Backend() string { return w.kind }

// Normalize returns the canonical form of a file path, for the
// read-before-write policy; the root is not a file path.
func (w *Workspace) Normalize(path string) (string, error) { return normalizeFile(path) }

// Version returns a hash of the file's current content, and whether a file
// exists at path (a normalised path). A directory, or a path that cannot
// hold a file, is no file.
func (w *Workspace) Version(path string) (string, bool, error) { return w.st.version(path) }

// Observed returns the version of the file at path as the call last read
// or wrote it, if it did. The read-before-write policy records that
// version rather than the current one, so that a change someone else
// makes between the read and the end of the call does not count as seen.
func (v *view) Observed(path string) (version string, exists, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	o, ok := v.observed[path]
	if !ok || !o.exists {
		return "", false, ok
	}
	return hashVersion(o.data), true, true
}

func (v *view) observe(path string, data []byte, exists bool) {
	v.mu.Lock()
	if v.observed == nil {
		v.observed = map[string]observation{}
	}
	v.observed[path] = observation{data: data, exists: exists}
	v.mu.Unlock()
}

// ReadFile is Workspace.ReadFile, observed.
func (v *view) ReadFile(path string) ([]byte, error) {
	p, err := normalizeFile(path)
	if err != nil {
		return nil, err
	}
	data, err := v.Workspace.ReadFile(p)
	if err == nil {
		v.observe(p, data, true)
	}
	return data, err
}

// WriteFile is Workspace.WriteFile, observed.
func (v *view) WriteFile(path string, data []byte) error {
	p, err := normalizeFile(path)
	if err != nil {
		return err
	}
	if err := v.Workspace.WriteFile(p, data); err != nil {
		return err
	}
	v.observe(p, data, true)
	return nil
}

// Remove is Workspace.Remove, observed.
func (v *view) Remove(path string) (int, error) {
	p, err := Normalize(path)
	if err != nil {
		return 0, err
	}
	n, err := v.Workspace.Remove(p)
	if err == nil {
		v.observe(p, nil, false)
	}
	return n, err
}

// Lock takes, for the current call of the session (named by call, its
// id), the locks of the files at paths, so that no other session or
// process changes them until the call's transaction ends: it commits or
// restores, and only then are they released. Paths that do not normalise
// are skipped. Locks are taken in path order, waiting for each until ctx
// is done; a lock that comes before one the call already holds is not
// waited for, so that calls never deadlock. A lock not free in time is an
// error that says the file is being changed by another call. The memory
// backend has nothing to lock.
//
// unlock releases the locks of a call that ends before its transaction
// begins (a later policy denies it); once a transaction has begun it does
// nothing. The read-before-write policy locks through Lock
// (policy.Locker) before it compares versions, so that its check and the
// write that follows happen under one lock.
func (w *Workspace) Lock(ctx context.Context, call string, paths []string) (unlock func(), err error) {
	var ps []string
	for _, p := range paths {
		if n, err := normalizeFile(p); err == nil {
			ps = append(ps, n)
		}
	}
	return w.st.lock(ctx, call, ps)
}

// Snapshot implements session.Snapshotter: O(1) for the memory backend (the
// tree is persistent), an empty undo journal for the disk backend.
func (w *Workspace) Snapshot() (session.Restorer, error) {
	u, err := w.st.snapshot()
	if err != nil {
		return nil, err
	}
	return restorer{u: u, w: w}, nil
}

// Freeze implements session.Freezer: the workspace as the last commit
// left it, for a reader outside the session's calls
// (session.Session.Committed). In memory it is the tree as it is now,
// O(1) whatever its size, which no call changes. On disk it reads the
// directory and, where calls of any session or process are in flight,
// what their undo journals say each path they changed held before
// (overlay.go); it costs nothing until it reads.
func (w *Workspace) Freeze() any {
	f, ok := w.st.(freezer)
	if !ok {
		return w
	}
	c := *w
	c.st = f.freeze()
	return &c
}

// freezer is a store that can copy itself as it is now, cheaply.
type freezer interface {
	// freeze returns a copy of the store as it is now, which the
	// store's changes since do not reach.
	freeze() store
}

// restorer is the session.Restorer of a workspace's snapshot.
type restorer struct {
	u undo
	w *Workspace
}

// Freeze implements session.Freezer: the workspace as it was at the
// snapshot, in memory (the tree then, O(1)); on disk, as the last commit
// left it, as Workspace.Freeze.
func (r restorer) Freeze() any {
	m, ok := r.u.(memUndo)
	if !ok {
		return r.w.Freeze()
	}
	c := *r.w
	f := &memStore{}
	f.t.Store(m.t)
	c.st = f
	return &c
}

func (r restorer) Restore() error { return r.u.restore() }
func (r restorer) Release()       { r.u.release() }

// Stat describes the file or directory at path.
func (w *Workspace) Stat(path string) (Info, error) {
	p, err := Normalize(path)
	if err != nil {
		return Info{}, err
	}
	return w.st.stat(p)
}

// ReadFile returns the content of the file at path. The caller must not
// change the returned bytes.
func (w *Workspace) ReadFile(path string) ([]byte, error) {
	p, err := normalizeFile(path)
	if err != nil {
		return nil, err
	}
	return w.st.readFile(p, w.maxFile)
}

// WriteFile creates or replaces the file at path, and its missing parent
// directories. The workspace keeps data; the caller must not change it.
func (w *Workspace) WriteFile(path string, data []byte) error {
	p, err := normalizeFile(path)
	if err != nil {
		return err
	}
	if w.maxFile > 0 && int64(len(data)) > w.maxFile {
		return errTooLarge
	}
	return w.st.writeFile(p, data)
}

// Remove removes the file or directory (with its contents) at path and
// returns the number of files removed. The root cannot be removed.
func (w *Workspace) Remove(path string) (int, error) {
	p, err := Normalize(path)
	if err != nil {
		return 0, err
	}
	if p == "" {
		return 0, errRoot
	}
	return w.st.remove(p)
}

// List returns the immediate children of the directory at path.
func (w *Workspace) List(path string) ([]Info, error) {
	p, err := Normalize(path)
	if err != nil {
		return nil, err
	}
	return w.st.list(p)
}

// Walk calls fn for every file under the directory at path, in path order,
// until fn returns an error, which Walk returns. Unless the backend
// includes ignored files, it leaves out .git and what .gitignore files
// ignore, as glob and grep do.
func (w *Workspace) Walk(path string, fn func(Info) error) error {
	p, err := Normalize(path)
	if err != nil {
		return err
	}
	return w.walk(p, fn)
}
