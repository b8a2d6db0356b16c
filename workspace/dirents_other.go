//go:build !linux

package workspace

import (
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
)

// dirHandle is a directory a walk reads from: its os.Root, and the
// directory itself, open.
type dirHandle struct {
	r    *os.Root
	f    *os.File
	refs atomic.Int32
}

// openTop opens the directory at name in root and lists it.
func openTop(root *os.Root, name string) (*dirHandle, []fs.DirEntry, error) {
	r, err := root.OpenRoot(name)
	if err != nil {
		return nil, nil, err
	}
	return listed(r)
}

// openSub opens the directory name of d and lists it.
func (d *dirHandle) openSub(name string) (*dirHandle, []fs.DirEntry, error) {
	r, err := d.r.OpenRoot(name)
	if err != nil {
		return nil, nil, err
	}
	return listed(r)
}

// listed opens the directory r for a walk, and lists it sorted by name;
// it closes r when it fails.
func listed(r *os.Root) (*dirHandle, []fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	d := &dirHandle{r: r, f: f}
	d.refs.Store(1)
	entries, err := f.ReadDir(-1)
	if err != nil {
		d.release()
		return nil, nil, err
	}
	sortEntries(entries)
	return d, entries, nil
}

func (d *dirHandle) close() {
	d.f.Close()
	d.r.Close()
}

// lstat describes the entry name of d, not following a link.
func (d *dirHandle) lstat(name string) (fs.FileInfo, error) { return d.r.Lstat(name) }

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
