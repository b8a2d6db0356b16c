package dist

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// entry is one file of an archive: its name inside the archive, its mode
// (0755 for the binary, 0644 for the rest) and its bytes.
type entry struct {
	name string
	mode fs.FileMode
	data []byte
}

// writeArchive writes entries to a new file at path: a gzipped tar when
// path ends in .tar.gz, else a zip (a .zip or an MCP Bundle's .mcpb).
// Every entry gets the time mtime, so that the same inputs give the same
// bytes. A zip entry keeps its Unix mode in the upper half of its
// external attributes, where unzip, Claude Desktop and the mcpb CLI read
// it; no directory entries are written (the mcpb CLI would unpack one as
// an empty file). On error the file is removed.
func writeArchive(path string, mtime time.Time, entries []entry) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if strings.HasSuffix(path, ".tar.gz") {
		return writeTarGz(f, mtime, entries)
	}
	return writeZip(f, mtime, entries)
}

func writeTarGz(w io.Writer, mtime time.Time, entries []entry) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.name,
			Mode:     int64(e.mode.Perm()),
			Size:     int64(len(e.data)),
			ModTime:  mtime,
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %v", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("%s: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, mtime time.Time, entries []entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(e.mode.Perm()) // creator Unix, mode in ExternalAttrs>>16
		ew, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("%s: %v", e.name, err)
		}
		if _, err := ew.Write(e.data); err != nil {
			return fmt.Errorf("%s: %v", e.name, err)
		}
	}
	return zw.Close()
}
