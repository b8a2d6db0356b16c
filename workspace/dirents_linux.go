package workspace

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
)

// readDirents lists the directory f with the types getdents gives, without
// a stat per entry (an os.File opened in an os.Root stats each one).
// Entries of a type the file system does not give are stat'ed when asked
// (fs.DirEntry.Info).
func readDirents(r *os.Root, f *os.File) ([]fs.DirEntry, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	buf := make([]byte, 16<<10)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.ReadDirent(int(fd), buf)
			return rerr != syscall.EAGAIN
		}); err != nil {
			return nil, err
		}
		if rerr != nil {
			return nil, rerr
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino, off, reclen, type, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino, typ, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
			b = b[reclen:]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			out = append(out, &dirent{r: r, name: string(name), typ: direntType(typ)})
		}
	}
}

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
	rc, err := d.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	cerr := rc.Control(func(dir uintptr) {
		for {
			fd, err = syscall.Openat(int(dir), name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
			if err != syscall.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return nil, cerr
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
