//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package workspace

import "os"

// tryFlock always succeeds: without flock(2), only the in-process locks
// hold, and one directory must not be shared by several processes.
func tryFlock(*os.File) (bool, error) { return true, nil }

// closeAndRemove closes f, then removes the file: an open file cannot be
// removed everywhere.
func closeAndRemove(f *os.File) error {
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}
