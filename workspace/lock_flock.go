//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package workspace

import (
	"errors"
	"os"
	"syscall"
)

// tryFlock takes an exclusive flock on f without waiting, and reports
// whether it got it.
func tryFlock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

// closeAndRemove removes the file f has open, then closes it: its flock
// lasts until the name is gone, so that no other process takes a lock on,
// or recovers, a file that is on its way out.
func closeAndRemove(f *os.File) error {
	err := os.Remove(f.Name())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
