package workspace

import (
	"io/fs"
)

// unknownType is the type of a directory entry whose listing did not say
// it.
const unknownType = fs.ModeIrregular | fs.ModeType

// dirent is an entry of a directory listing with the type the listing
// gave; its Info is a stat in the directory, made when asked.
type dirent struct {
	d    *dirHandle
	name string
	typ  fs.FileMode
}

func (d *dirent) Name() string { return d.name }
func (d *dirent) IsDir() bool  { return d.typ == fs.ModeDir }

// Type is the type the listing gave, or the one a stat finds when it gave
// none.
func (d *dirent) Type() fs.FileMode {
	if d.typ == unknownType {
		if fi, err := d.d.lstat(d.name); err == nil {
			d.typ = fi.Mode().Type()
		}
	}
	return d.typ
}

func (d *dirent) Info() (fs.FileInfo, error) { return d.d.lstat(d.name) }

// retain adds a holder of d, a directory a walk reads from and a search
// opens files in (openIn), and returns its release. d is closed once the
// walk has left it and no search still holds it.
func (d *dirHandle) retain() func() {
	d.refs.Add(1)
	return d.release
}

// release drops a holder of d; the last one closes it.
func (d *dirHandle) release() {
	if d.refs.Add(-1) == 0 {
		d.close()
	}
}
