package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// walkTree is a tree of many directories, deeper than the walk's window,
// with names whose order tests path order ("a", "a-b", "a/b"), ignored
// directories at several depths, and .gitignore files that negate.
func walkTree() map[string]string {
	files := map[string]string{
		".gitignore":         "*.tmp\nskip/\n/top-only\n",
		"a/.gitignore":       "!keep.tmp\ngen/\n",
		"a-b/f.go":           "x",
		"a/b/f.go":           "x",
		"a.go":               "x",
		"top-only/f.go":      "x",
		"n/top-only/f.go":    "x",
		"a/keep.tmp":         "x",
		"a/drop/x.tmp":       "x",
		"a/gen/f.go":         "x",
		"skip/f.go":          "x",
		".git/HEAD":          "x",
		"z/y/x/w/v/u/t/s.go": "x",
	}
	for i := range 40 {
		for j := range 6 {
			files[fmt.Sprintf("d%02d/e%d/f.go", i, j)] = "x"
			files[fmt.Sprintf("d%02d/e%d-x/g.go", i, j)] = "x"
			files[fmt.Sprintf("d%02d/e%d/skip/h.go", i, j)] = "x"
		}
		files[fmt.Sprintf("d%02d/a.tmp", i)] = "x"
	}
	return files
}

// walked returns the files w.walk visits.
func walked(t *testing.T, w *Workspace, dir string) []string {
	t.Helper()
	var got []string
	if err := w.walk(dir, func(in Info) error {
		got = append(got, in.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDiskWalkOrder: the disk's parallel walk visits exactly the files the
// memory backend's walk does, in the same path order, the ignore rules
// applied at every depth, from the root and from a directory.
func TestDiskWalkOrder(t *testing.T) {
	files := walkTree()
	var ws []*Workspace
	for _, bk := range backends {
		b, _ := bk.open(t, files)
		w, err := newWorkspace(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, dir := range []string{"", "a", "d03", "z/y"} {
		mem, disk := walked(t, ws[0], dir), walked(t, ws[1], dir)
		if !slices.Equal(mem, disk) {
			t.Errorf("walk of %q: disk\n%s\nmemory\n%s", dir, strings.Join(disk, "\n"), strings.Join(mem, "\n"))
		}
		if !slices.IsSortedFunc(disk, comparePaths) {
			t.Errorf("walk of %q is not in path order", dir)
		}
	}
	all := walked(t, ws[1], "")
	if want := 8 + 40*6*2; len(all) != want {
		t.Errorf("walked %d files, want %d", len(all), want)
	}
	for _, p := range all {
		if strings.HasSuffix(p, ".tmp") && p != "a/keep.tmp" || strings.Contains(p, "skip/") || strings.HasPrefix(p, "top-only/") || strings.Contains(p, "gen/") {
			t.Errorf("walked %s, which is ignored", p)
		}
	}
}

// TestDiskWalkStops: a walk that fn stops early, or that skips
// directories, leaves no descriptor of the tree open, and a walk of a missing
// directory fails.
func TestDiskWalkStops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	b, root := backends[1].open(t, walkTree())
	w, err := newWorkspace(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	ds := w.st.(*diskStore)
	fds := func() []string {
		entries, _ := os.ReadDir("/proc/self/fd")
		var out []string
		for _, e := range entries {
			if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(target, root) {
				out = append(out, target)
			}
		}
		slices.Sort(out)
		return out
	}
	before := fds()
	for _, stopAt := range []int{1, 10, 100, 400} {
		n := 0
		err := w.walk("", func(Info) error {
			if n++; n == stopAt {
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) {
			t.Errorf("stopped at %d: %v", stopAt, err)
		}
	}
	n := 0
	if err := ds.walk("", func(in Info) error {
		if in.Dir && strings.HasPrefix(in.Path, "d") {
			return fs.SkipDir
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("walked nothing")
	}
	if err := w.walk("missing", func(Info) error { return nil }); !errors.Is(err, errNotExist) {
		t.Errorf("walk of a missing directory: %v", err)
	}
	if after := fds(); !slices.Equal(after, before) {
		t.Errorf("descriptors open before the walks:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

// TestDiskWalkLinkedIgnoreFile: a .gitignore that is a link inside the
// root is honoured by the walk, as by rulesAt.
func TestDiskWalkLinkedIgnoreFile(t *testing.T) {
	b, root := backends[1].open(t, map[string]string{"rules/ignore": "*.tmp\n", "sub/a.tmp": "x", "sub/b.go": "x"})
	if err := os.Symlink("../rules/ignore", filepath.Join(root, "sub", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	w, err := newWorkspace(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", "sub"} {
		if got := strings.Join(walked(t, w, dir), " "); !strings.Contains(got, "sub/b.go") || strings.Contains(got, "a.tmp") {
			t.Errorf("walk of %q: %s", dir, got)
		}
	}
}
