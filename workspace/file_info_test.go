package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileInfo: file_info's type, size and line count on both backends;
// the modification time on disk only.
func TestFileInfo(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, sample)
		for _, s := range []step{
			{"file_info", `{"path":"src/main.go"}`, "Info for src/main.go.\n\ntype: file\nsize: 43 bytes\nlines: 4...", false},
			{"file_info", `{"path":"notes/empty.txt"}`, "Info for notes/empty.txt.\n\ntype: file\nsize: 0 bytes\nlines: 0...", false},
			{"file_info", `{"path":"bin/blob.bin"}`, "Info for bin/blob.bin.\n\ntype: file\nsize: 9 bytes\nbinary: not UTF-8 text...", false},
			{"file_info", `{"path":"src"}`, "Info for src.\n\ntype: directory...", false},
			{"file_info", `{"path":""}`, "Info for /.\n\ntype: directory...", false},
			{"file_info", `{}`, "Info for /.\n\ntype: directory...", false},
			{"file_info", `{"path":"nope"}`, "No such file or directory: nope", true},
			{"file_info", `{"path":"README.md/x"}`, "Cannot use README.md/x: README.md is a file, not a directory.", true},
		} {
			s.check(t, h)
		}
		text := h.mustCall("file_info", `{"path":"src/main.go"}`)
		if got := strings.Contains(text, "\nmodified: "); got != (bk.name == "disk") {
			t.Errorf("modified shown = %v on %s: %q", got, bk.name, text)
		}
	})
}

// TestFileInfoOnDisk: symbolic links are said to be links, with what they
// lead to; special files are named as ls names them and never opened; the
// time is the file's.
func TestFileInfoOnDisk(t *testing.T) {
	h := newHarness(t, backends[1], map[string]string{"a.txt": "one\ntwo"})
	stamp := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(h.dir, "a.txt"), stamp, stamp); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"a.txt", "to_file"}, {".", "to_dir"}} {
		if err := os.Symlink(l[0], filepath.Join(h.dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	steps := []step{
		{"file_info", `{"path":"a.txt"}`, "Info for a.txt.\n\ntype: file\nsize: 7 bytes\nlines: 2\nmodified: 2025-06-01T12:00:00Z", false},
		{"file_info", `{"path":"to_file"}`, "Info for to_file.\n\ntype: symlink (to a file)\nsize: 7 bytes\nlines: 2\nmodified: 2025-06-01T12:00:00Z", false},
		{"file_info", `{"path":"to_dir"}`, "Info for to_dir.\n\ntype: symlink (to a directory)...", false},
	}
	if err := syscall.Mkfifo(filepath.Join(h.dir, "pipe"), 0o644); err == nil {
		// Opening the pipe would block: file_info must not.
		steps = append(steps, step{"file_info", `{"path":"pipe"}`, "Info for pipe.\n\ntype: named pipe...", false})
	}
	for _, s := range steps {
		s.check(t, h)
	}
}
