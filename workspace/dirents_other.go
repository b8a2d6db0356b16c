//go:build !linux

package workspace

import (
	"io/fs"
	"os"
)

// readDirents lists the directory f (in r) as os.File.ReadDir does.
func readDirents(_ *os.Root, f *os.File) ([]fs.DirEntry, error) {
	return f.ReadDir(-1)
}
