package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// largePath is the path of the i-th file of TestLargeSessionRestarted:
// half of them in one directory of 10,000, half in directories of 100.
func largePath(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("flat/f%05d.txt", i)
	}
	return fmt.Sprintf("d%03d/f%05d.txt", i/200, i)
}

// TestLargeSessionRestarted: a session of 20,000 files (one directory of
// 10,000, the rest in directories of 100), half of it written through one
// process, which then exits, is continued by a second process on the same
// state directory, which writes the other half, and read through a third
// at the same time: every file's content is there, and each process's
// changes are seen by the other. (Each process lives less than the
// harness's failsafe, also with the race detector. The first exits rather
// than being killed: after a SIGKILL the embedded store's next start
// rebuilds its index of every blob, which for 10,000 files with the race
// detector on a loaded machine took longer than the store's start may.)
func TestLargeSessionRestarted(t *testing.T) {
	const files = 20000
	if testing.Short() {
		t.Skip("20,000 files")
	}
	args := []string{"--session", "large", "--state-dir", t.TempDir()}
	write := func(c *stdioClient, from, to int) {
		for at := from; at < to; at += 200 {
			var edits []map[string]any
			for i := at; i < at+200; i++ {
				edits = append(edits, map[string]any{"op": "write", "file_path": largePath(i), "content": fmt.Sprintf("file %d\n", i)})
			}
			if r := c.call(t, "apply_edits", map[string]any{"edits": edits}); r.IsError {
				t.Fatalf("writing files %d to %d: %s", at, at+199, r.text())
			}
		}
	}
	first := &stdioClient{p: start(t, "", args...), modern: true}
	write(first, 0, files/2)
	first.p.closeStdin()
	if code := first.p.wait(); code != 0 {
		t.Fatalf("the first process exited with %d", code)
	}

	second := &stdioClient{p: start(t, "", args...), modern: true}
	write(second, files/2, files)
	third := &stdioClient{p: start(t, "", args...), modern: true}
	if r := second.call(t, "write_file", map[string]any{"file_path": "flat/f00000.txt", "content": "changed by the second\n", "overwrite": true}); r.IsError {
		t.Fatalf("overwriting a file the first process wrote: %s", r.text())
	}
	if r := second.call(t, "rm", map[string]any{"path": "flat/f00002.txt"}); r.IsError {
		t.Fatalf("removing a file: %s", r.text())
	}
	if r := third.call(t, "write_file", map[string]any{"file_path": "flat/new.txt", "content": "new from the third\n"}); r.IsError {
		t.Fatalf("writing through the third: %s", r.text())
	}
	if r := second.call(t, "read_file", map[string]any{"file_path": "flat/new.txt"}); r.IsError || !strings.Contains(r.text(), "1 | new from the third") {
		t.Fatalf("the second reads the third's file: %s", r.text())
	}
	for at := 0; at < files; at += 20 {
		var paths []string
		for i := at; i < at+20; i++ {
			paths = append(paths, largePath(i))
		}
		reader := third
		if at%40 == 0 {
			reader = second
		}
		r := reader.call(t, "read_multiple_files", map[string]any{"paths": paths})
		text := r.text()
		for i := at; i < at+20; i++ {
			want := fmt.Sprintf("1 | file %d\n", i)
			switch i {
			case 0:
				want = "1 | changed by the second"
			case 2:
				want = "File does not exist"
			}
			if !strings.Contains(text+"\n", want) {
				t.Fatalf("%s: %q not in\n%s", largePath(i), want, text)
			}
		}
	}
}
