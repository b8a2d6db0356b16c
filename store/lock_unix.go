//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the exclusive lock of f without waiting, and reports false
// if another process holds it.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
