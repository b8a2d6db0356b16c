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
