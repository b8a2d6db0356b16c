//go:build !linux

package workspace

import (
	"io/fs"
	"os"
	"syscall"
)

// readDirents lists the directory f (in r) as os.File.ReadDir does.
func readDirents(_ *os.Root, f *os.File) ([]fs.DirEntry, error) {
	return f.ReadDir(-1)
}

// openIn opens the regular file named name in the directory d for reading,
// without blocking on a named pipe swapped in since the listing, and
// refusing anything but a regular file.
func openIn(d *dirHandle, name string) (opened, error) {
	f, err := d.r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, diskErr(err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkMode(fi.Mode(), false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return osFile{f: f, size: fi.Size()}, nil
}
