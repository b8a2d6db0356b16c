package session

import "errors"

// FileChange is what a call did to one file of a resource that keeps
// files, such as a workspace: its content before and after the call (nil
// with Existed or Exists false when there was, or is, no file). With Dir,
// the path is a directory that the call made (Exists) or removed
// (Existed).
type FileChange struct {
	Path            string
	Before, After   []byte
	Existed, Exists bool
	Dir             bool
	// Outside says that the file lives outside the session's stored state
	// (a disk workspace): putting the session back to an earlier state
	// does not put the file back, the caller must (see Files).
	Outside bool
}

// Changer is a Restorer that tells what changed since its snapshot: the
// files whose content or existence differs, in path order.
type Changer interface {
	Changes() ([]FileChange, error)
}

// Files is a per-session resource whose files live outside the session's
// stored state (a disk workspace). Putting such a file back is a change of
// the current call, which its transaction covers.
type Files interface {
	// File returns the current content of the file at path, and whether
	// it exists; dir reports a directory there instead.
	File(path string) (data []byte, exists, dir bool, err error)
	// PutFile makes the file at path hold data, or removes it when exists
	// is false.
	PutFile(path string, data []byte, exists bool) error
	// PutDir makes the directory at path, or removes it, empty, when
	// exists is false.
	PutDir(path string, exists bool) error
}

// Changes returns what the resources of tx's snapshots that implement
// Changer say changed since Begin. A read-only call's transaction has no
// snapshot, and reports none.
func (tx *Tx) Changes() ([]FileChange, error) {
	var out []FileChange
	var errs []error
	for _, r := range tx.restorers {
		if c, ok := r.(Changer); ok {
			ch, err := c.Changes()
			out = append(out, ch...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Before returns the values of the STATE slices at Begin, by name; nil for
// a read-only call's transaction. The values are shared and must not be
// changed.
func (tx *Tx) Before() map[string]any {
	if tx.read {
		return nil
	}
	return tx.state
}

// FilesOf returns the session's per-session resources that implement
// Files.
func FilesOf(s *Session) []Files {
	var out []Files
	for _, r := range s.Resources() {
		if f, ok := r.(Files); ok {
			out = append(out, f)
		}
	}
	return out
}

// ReplaceSlices sets every STATE slice of s to its value in values, and
// empties the slices values does not name: the session's state becomes
// values, as Rollback makes it the snapshot's.
func (s *Session) ReplaceSlices(values map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = make(map[string]any, len(values))
	for k, v := range values {
		s.state[k] = v
	}
}
