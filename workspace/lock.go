package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// lockSuffix ends the names of lock files in a workspace's state
// directory.
const lockSuffix = ".lock"

// errBusy: a lock that a call may not wait for (see diskStore.take) is held.
var errBusy = errors.New("busy")

// busyError is the error of a call that could not take the lock of a file
// that another call, of this process or another, is changing: before its
// deadline, or at once when waiting could deadlock.
type busyError struct{ path string }

func (e *busyError) Error() string {
	return fmt.Sprintf("File '%s' is being changed by another call; try again.", e.path)
}

// fileLock is the lock of one workspace path, held: an exclusive flock(2)
// on a lock file in the workspace's state directory, which excludes other
// processes, taken under an in-process lock on the same name, which makes
// the goroutines of this process wait their turn without polling. The
// lock file exists only while someone holds it, and holds the id of the
// holder's undo journal.
type fileLock struct {
	f      *os.File // the lock file
	unlock func()   // the in-process lock
}

// lockName returns the lock file of path p in dir.
func lockName(dir, p string) string {
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+lockSuffix)
}

// acquire takes the lock file name, waiting until ctx is done if wait is
// set, and returns it with the journal id it names: empty, unless its last
// holder died holding it. A holder unlinks the lock file before it lets go,
// so a waiter that wakes on an unlinked file tries again on the new one.
func acquire(ctx context.Context, name string, wait bool) (*fileLock, string, error) {
	unlock, err := lockInProcess(ctx, name, wait)
	if err != nil {
		return nil, "", err
	}
	f, err := flockFile(ctx, name, wait)
	if err != nil {
		unlock()
		return nil, "", err
	}
	var buf [64]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		f.Close()
		unlock()
		return nil, "", err
	}
	return &fileLock{f: f, unlock: unlock}, string(buf[:n]), nil
}

// flockFile opens (creating) the file name of a state directory, a lock
// file or a journal, and flocks it, waiting until ctx is done if wait is
// set.
func flockFile(ctx context.Context, name string, wait bool) (*os.File, error) {
	delay := time.Millisecond
	for {
		f, err := createInStateDir(name, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, err
		}
		for {
			ok, err := tryFlock(f)
			if err != nil {
				f.Close()
				return nil, err
			}
			if ok {
				break
			}
			if !wait {
				f.Close()
				return nil, errBusy
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				f.Close()
				return nil, ctx.Err()
			case <-t.C:
			}
			delay = min(2*delay, 20*time.Millisecond)
		}
		// The holder before may have unlinked the file it held: the lock is
		// only good on the file that is at the name now.
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if cur, err := os.Stat(name); err == nil && os.SameFile(fi, cur) {
			return f, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.Close()
			return nil, err
		}
		f.Close()
	}
}

// createInStateDir opens the file name in a workspace's state directory
// with flag, making the directory again if a process that closed the
// workspace has just removed it.
func createInStateDir(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(name, flag, 0o600)
	}
	return f, err
}

// mark writes the id of the holder's journal into the lock file.
func (l *fileLock) mark(id string) error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(id), 0)
	return err
}

// release unlinks the lock file, then lets go of it.
func (l *fileLock) release() error {
	err := closeAndRemove(l.f)
	l.unlock()
	return err
}

// inProcess holds the in-process locks by lock file name, each a
// semaphore of one with the number of goroutines holding or waiting for
// it, so that the entry goes when nobody needs it.
var inProcess = struct {
	sync.Mutex
	m map[string]*procLock
}{m: map[string]*procLock{}}

type procLock struct {
	ch   chan struct{}
	refs int
}

// lockInProcess takes the in-process lock of name, waiting until ctx is
// done if wait is set.
func lockInProcess(ctx context.Context, name string, wait bool) (func(), error) {
	inProcess.Lock()
	l := inProcess.m[name]
	if l == nil {
		l = &procLock{ch: make(chan struct{}, 1)}
		inProcess.m[name] = l
	}
	l.refs++
	inProcess.Unlock()
	drop := func() {
		inProcess.Lock()
		if l.refs--; l.refs == 0 {
			delete(inProcess.m, name)
		}
		inProcess.Unlock()
	}
	unlock := func() { <-l.ch; drop() }
	select {
	case l.ch <- struct{}{}:
		return unlock, nil
	default:
	}
	if !wait {
		drop()
		return nil, errBusy
	}
	select {
	case l.ch <- struct{}{}:
		return unlock, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}
