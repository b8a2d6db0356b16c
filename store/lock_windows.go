//go:build windows

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes the exclusive lock of f without waiting, and reports false
// if another process holds it (or another open file of this process). An
// error wraps errLocksUnsupported where the filesystem has no locks. The locked byte lies far past the file's
// content, so that the holder's id stays readable.
func tryLock(f *os.File) (bool, error) {
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0,
		&windows.Overlapped{OffsetHigh: 1})
	switch {
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	case errors.Is(err, windows.ERROR_NOT_SUPPORTED), errors.Is(err, windows.ERROR_INVALID_FUNCTION):
		return false, fmt.Errorf("%w: %w", errLocksUnsupported, err)
	}
	return err == nil, err
}

// unlock releases the lock of f.
func unlock(f *os.File) {
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &windows.Overlapped{OffsetHigh: 1})
}
