package workspace

import (
	"fmt"
	"strings"
	"testing"
)

// TestReadMultipleFiles: each path gets its lines or its own error, one
// bad path failing none of the others; the files read count as read.
func TestReadMultipleFiles(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, sample)
		for _, s := range []step{
			{"read_multiple_files", `{"paths":["README.md","nope","bin/blob.bin","../x","src","notes/empty.txt"]}`,
				"Read 2 files; 4 could not be read.\n\n" +
					"== README.md (3 lines of 3) ==\n   1 | # Title\n   2 | \n   3 | Body text.\n\n" +
					"== nope: error ==\nFile does not exist: nope\n\n" +
					"== bin/blob.bin: error ==\nFile bin/blob.bin is binary; only UTF-8 text can be read or edited.\n\n" +
					"== ../x: error ==\nPath segments may not include '.' or '..'.\n\n" +
					"== src: error ==\nsrc is a directory, not a file.\n\n" +
					"== notes/empty.txt (0 lines of 0) ==\n(no lines)", false},
			{"read_multiple_files", `{"paths":[]}`, "Provide 1 to 20 paths; got 0.", true},
			{"read_multiple_files", `{"paths":["a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a"]}`, "Provide 1 to 20 paths; got 21.", true},
			// What was read counts as read; what failed does not.
			{"edit_file", `{"file_path":"README.md","old_string":"Title","new_string":"T"}`, "Replaced 1 occurrence in README.md.", false},
			{"write_file", `{"file_path":"bin/blob.bin","content":"x","overwrite":true}`, "File 'bin/blob.bin' must be read before overwriting.", true},
		} {
			s.check(t, h)
		}
	})
}

// TestReadMultipleFilesPage: the files of one call share one page of
// PageBytes; a file cut short says where to read on.
func TestReadMultipleFilesPage(t *testing.T) {
	line := strings.Repeat("x", 999)
	big := strings.Repeat(line+"\n", 40) // 40,000 bytes
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"a": big, "b": big, "c": "c\n"})
		text := h.mustCall("read_multiple_files", `{"paths":["a","b","c"]}`)
		for _, want := range []string{
			"== a (40 lines of 40) ==",
			fmt.Sprintf("== b (%d lines of 40; more follow from offset %d) ==", PageBytes/1000-40, PageBytes/1000-40),
			"== c (1 line of 1) ==",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("missing %q in:\n%.300s", want, text)
			}
		}
	})
}
