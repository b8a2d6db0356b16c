package workspace

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dirHandle is a directory open as a bare descriptor: a walk opens each
// directory from its parent's with one openat of a single name that does
// not follow a link, and lists it with getdents, a system call or two
// rather than the dozen of an os.Root and an os.File (which would try to
// add it to the runtime's poller).
type dirHandle struct {
	fd   int
	refs atomic.Int32
}

// openTop opens the directory at name in root (resolved as os.Root does)
// and lists it.
func openTop(root *os.Root, name string) (*dirHandle, []fs.DirEntry, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	fd := -1
	if cerr := rc.Control(func(from uintptr) {
		var r uintptr
		var errno syscall.Errno
		r, _, errno = syscall.Syscall(syscall.SYS_FCNTL, from, syscall.F_DUPFD_CLOEXEC, 0)
		if fd = int(r); errno != 0 {
			fd, err = -1, errno
		}
	}); cerr != nil {
		return nil, nil, cerr
	}
	if err != nil {
		return nil, nil, err
	}
	return listed(fd)
}

// openSub opens the directory name of d, not following a link, and lists
// it.
func (d *dirHandle) openSub(name string) (*dirHandle, []fs.DirEntry, error) {
	for {
		fd, err := syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, nil, err
		}
		return listed(fd)
	}
}

// listed makes the directory open as fd a handle, and lists it sorted by
// name (readDirents sorts); it closes fd when it fails.
func listed(fd int) (*dirHandle, []fs.DirEntry, error) {
	d := &dirHandle{fd: fd}
	d.refs.Store(1)
	entries, err := d.readDirents()
	if err != nil {
		d.release()
		return nil, nil, err
	}
	return d, entries, nil
}

func (d *dirHandle) close() { syscall.Close(d.fd) }

// lstat describes the entry name of d, not following a link.
func (d *dirHandle) lstat(name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		return &statInfo{name: name, st: st}, nil
	}
}

// statInfo is the fs.FileInfo of a stat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }

// Mode converts the stat's mode as package os does.
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// readDirents lists d with the types getdents gives, without a stat per
// entry. Entries of a type the file system does not give are stat'ed
// when asked (fs.DirEntry.Info). The entries are allocated together,
// their names are slices of one string, and they are sorted by name.
func (d *dirHandle) readDirents() ([]fs.DirEntry, error) {
	var ents []dirent
	var names []byte
	var ends []int
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := syscall.ReadDirent(d.fd, buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino, off, reclen, type, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino, typ, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			names = append(names, name...)
			ends = append(ends, len(names))
			ents = append(ents, dirent{d: d, typ: direntType(typ)})
		}
	}
	all := string(names)
	start := 0
	for i := range ents {
		ents[i].name = all[start:ends[i]]
		start = ends[i]
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	out := make([]fs.DirEntry, len(ents))
	for i := range ents {
		out[i] = &ents[i]
	}
	return out, nil
}

// direntBufs are the buffers getdents fills.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// direntType is the mode type of a getdents type; unknownType for
// DT_UNKNOWN.
func direntType(t byte) fs.FileMode {
	switch t {
	case syscall.DT_REG:
		return 0
	case syscall.DT_DIR:
		return fs.ModeDir
	case syscall.DT_LNK:
		return fs.ModeSymlink
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe
	case syscall.DT_SOCK:
		return fs.ModeSocket
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.DT_BLK:
		return fs.ModeDevice
	}
	return unknownType
}

// openIn opens the regular file named name in the directory d for reading:
// one openat relative to the directory, which does not follow a symbolic
// link (a name the listing said was a file), nor block on a named pipe
// swapped in since, and one fstat, which refuses anything but a regular
// file. The descriptor is used as it is, without an os.File, which would
// try to add it to the runtime's poller, a system call more per file.
func openIn(d *dirHandle, name string) (opened, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, diskErr(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, errSpecial
	}
	return rawFile{fd: fd, size: st.Size}, nil
}

// rawFile is a regular file open as a bare descriptor, with the size it had
// when opened.
type rawFile struct {
	fd   int
	size int64
}

func (f rawFile) read(into *[]byte, limit int64) ([]byte, error) {
	defer syscall.Close(f.fd)
	return readSized(into, f.size, limit, func(b []byte) (int, error) {
		for {
			n, err := syscall.Read(f.fd, b)
			if err != syscall.EINTR {
				return max(n, 0), err
			}
		}
	})
}
