//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// tryLock takes the exclusive lock of f without waiting, and reports false
// if another process holds it (or another open file of this process). An
// error wraps errLocksUnsupported where the filesystem has no locks.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EINVAL):
		return false, fmt.Errorf("%w: %w", errLocksUnsupported, err)
	}
	return err == nil, err
}

// unlock releases the lock of f.
func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
