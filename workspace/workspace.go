package workspace

import (
	"context"
	"sync"

	"github.com/wink-mcp/wink-mcp/session"
)

// DefaultMaxFileBytes is the largest file the tools write or read when
// Options.MaxFileBytes is zero: 32 MiB.
const DefaultMaxFileBytes = 32 << 20

// Workspace is one session's workspace: its view of the backend, the
// versions of the files its current call read or wrote, and the snapshots
// that make it one more thing a transaction covers. Other sections reach it
// with From. Paths given to its methods are normalised first; errors for
// bad paths are *PathError.
type Workspace struct {
	st      store
	kind    string
	maxFile int64

	mu       sync.Mutex
	observed map[string]observation
}

// observation is a file as the current call saw it: its content, hashed
// only if the policy asks for its version.
type observation struct {
	data   []byte
	exists bool
}

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
	return &Workspace{st: st, kind: b.Kind(), maxFile: maxFile}, nil
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

// Observed returns the version of the file at path as the current call
// last read or wrote it, if it did. The read-before-write policy records
// that version rather than the current one, so that a change someone else
// makes between the read and the end of the call does not count as seen.
func (w *Workspace) Observed(path string) (version string, exists, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.observed[path]
	if !ok || !o.exists {
		return "", false, ok
	}
	return hashVersion(o.data), true, true
}

func (w *Workspace) observe(path string, data []byte, exists bool) {
	w.mu.Lock()
	if w.observed == nil {
		w.observed = map[string]observation{}
	}
	w.observed[path] = observation{data: data, exists: exists}
	w.mu.Unlock()
}

func (w *Workspace) forget() {
	w.mu.Lock()
	w.observed = nil
	w.mu.Unlock()
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
	w.forget()
	return restorer{w: w, u: u}, nil
}

type restorer struct {
	w *Workspace
	u undo
}

func (r restorer) Restore() error {
	r.w.forget()
	return r.u.restore()
}

func (r restorer) Release() {
	r.w.forget()
	r.u.release()
}

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
	data, err := w.st.readFile(p, w.maxFile)
	if err != nil {
		return nil, err
	}
	w.observe(p, data, true)
	return data, nil
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
	if err := w.st.writeFile(p, data); err != nil {
		return err
	}
	w.observe(p, data, true)
	return nil
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
	n, err := w.st.remove(p)
	if err == nil {
		w.observe(p, nil, false)
	}
	return n, err
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
// until fn returns an error, which Walk returns.
func (w *Workspace) Walk(path string, fn func(Info) error) error {
	p, err := Normalize(path)
	if err != nil {
		return err
	}
	return w.st.walk(p, fn)
}
