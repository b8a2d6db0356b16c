package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/session"
)

// Errors a store returns for paths that cannot be used as asked. Tools turn
// them into the messages of the specification.
var (
	// errNotExist: nothing at the path.
	errNotExist = fs.ErrNotExist
	// errIsDir: a directory where a file was expected.
	errIsDir = errors.New("is a directory")
	// errNotDir: a file where a directory was expected; the parentError
	// wrapping it names which.
	errNotDir = errors.New("not a directory")
	// errEscapes: the path resolves outside the workspace root (disk:
	// through a symbolic link).
	errEscapes = errors.New("resolves outside the workspace")
	// errTooLarge: a file larger than the configured limit.
	errTooLarge = errors.New("file too large")
)

// parentError reports that an ancestor of a path is not a directory.
type parentError struct{ path string }

func (e *parentError) Error() string { return e.path + " is a file, not a directory" }
func (e *parentError) Unwrap() error { return errNotDir }

// Info describes one file or directory of the workspace.
type Info struct {
	// Path is the normalised path ("" for the root).
	Path string `json:"path"`
	// Dir says whether it is a directory.
	Dir bool `json:"dir"`
	// Size is a file's length in bytes; 0 for a directory.
	Size int64 `json:"size"`
	// Special names the kind of a disk file that is neither regular nor a
	// directory ("named pipe", "socket", "device"), which the workspace
	// lists but never opens; empty otherwise.
	Special string `json:"special,omitempty"`
	// Link says that the path is a symbolic link inside the root (disk
	// only, from lstat and list); the other fields describe its target.
	Link bool `json:"link,omitempty"`
	// ModTime is when the content last changed (disk only, and only from
	// lstat); zero in memory, which keeps no times.
	ModTime time.Time `json:"mod_time,omitzero"`

	// open opens a file the walk found for reading, as it sees it: set by
	// walk for files. It works during the walk's call of fn, and after it
	// until the release that retain, called during fn, returns is called
	// (retain is nil when there is nothing to hold: open always works).
	open   func() (opened, error)
	retain func() (release func())
	// noIgnoreFile says that a directory the walk found holds no
	// .gitignore file, when the walk knows it.
	noIgnoreFile bool
}

// store is one session's view of a backend: the operations the tools use,
// on normalised paths, and snapshots that a transaction restores. Stores
// are not safe for concurrent writes; the session serialises its calls.
// Reads may run concurrently with one writer.
type store interface {
	// stat describes the file or directory at p.
	stat(p string) (Info, error)
	// lstat describes the entry at p as a listing does: a special file is
	// described rather than refused, and a symbolic link is said to be
	// one; it also gives the modification time.
	lstat(p string) (Info, error)
	// readFile returns the content of the file at p; a file larger than
	// max bytes is errTooLarge (max <= 0: no limit).
	readFile(p string, max int64) ([]byte, error)
	// writeFile creates or replaces the file at p, creating missing parent
	// directories.
	writeFile(p string, data []byte) error
	// mkdir makes the directory at p and its missing parents, and says
	// whether it made p; a directory already there is no error.
	mkdir(p string) (bool, error)
	// move renames the file or directory at src to dst, making dst's
	// missing parents and replacing a file at dst. The caller checks that
	// src exists, that dst is not a directory and not under src.
	move(src, dst string) error
	// remove removes the file or directory (recursively) at p and returns
	// the number of files removed.
	remove(p string) (int, error)
	// list returns the immediate children of the directory at p, in path
	// order.
	list(p string) ([]Info, error)
	// walk calls fn for every directory and file under the directory at
	// dir, in path order (a directory before its contents), until fn
	// returns an error; fs.SkipDir for a directory skips its contents.
	walk(dir string, fn func(Info) error) error
	// scan is walk for the searches, which need no sizes: it may leave
	// Info.Size 0 for files, sparing a stat of each.
	scan(dir string, fn func(Info) error) error
	// version returns a token that changes whenever the content of the
	// file at p changes, and whether a file exists there.
	version(p string) (string, bool, error)
	// snapshot records the current state; the returned undo restores it.
	snapshot() (undo, error)
	// lock takes the locks of paths for the current call (see
	// Workspace.Lock).
	lock(ctx context.Context, call string, paths []string) (unlock func(), err error)
}

// undo restores a store to a snapshot, or forgets the snapshot.
type undo interface {
	restore() error
	release()
	// changes returns the files that differ from the snapshot.
	changes() ([]session.FileChange, error)
}

// hashVersion is the version token of content: a hash of it.
func hashVersion(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// isBinary reports whether data is not UTF-8 text: it has a NUL byte or an
// invalid UTF-8 sequence.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data)
}
