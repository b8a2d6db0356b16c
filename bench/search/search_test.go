package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGen: a generated tree has the files asked for, the planted matches
// exactly in the files searched, more in ignored ones, no absent literal,
// a .gitignore beside a .git directory, binaries, _test.go files, and the
// same tree for the same seed.
func TestGen(t *testing.T) {
	for _, n := range []int{50, 3000} {
		dir := filepath.Join(t.TempDir(), "tree")
		wrote, err := gen(dir, n, 7)
		if err != nil {
			t.Fatal(err)
		}
		if wrote < n || wrote > n+GenMatches {
			t.Errorf("n=%d: wrote %d files", n, wrote)
		}
		re := regexp.MustCompile(Planted)
		ignored := regexp.MustCompile(`(^|/)(node_modules|build)/|\.log$|^dist/`)
		var files, matches, ignoredMatches, binaries, tests int
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			if rel == ".gitignore" {
				return nil
			}
			files++
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(Absent)) {
				t.Errorf("%s holds the absent literal", rel)
			}
			switch {
			case bytes.IndexByte(data, 0) >= 0:
				binaries++
			case ignored.MatchString(rel):
				ignoredMatches += len(re.FindAll(data, -1))
			default:
				matches += len(re.FindAll(data, -1))
				if strings.HasSuffix(rel, "_test.go") {
					tests++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files != wrote || matches != GenMatches {
			t.Errorf("n=%d: %d files (wrote %d), %d planted matches in searched files", n, files, wrote, matches)
		}
		if info, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !info.IsDir() {
			t.Errorf("n=%d: no .git directory: %v", n, err)
		}
		if n >= 3000 && (ignoredMatches == 0 || binaries == 0 || tests == 0) {
			t.Errorf("n=%d: %d matches in ignored files, %d binaries, %d _test.go files", n, ignoredMatches, binaries, tests)
		}
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if _, err := gen(a, 200, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := gen(b, 200, 3); err != nil {
		t.Fatal(err)
	}
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Error("the same seed wrote two different trees")
	}
	if _, err := gen(a, 10, 3); err == nil {
		t.Error("gen wrote into a directory that exists")
	}
}

// digest describes a tree: each file's path and content.
func digest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "\x00" + string(data) + "\x00")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRgOutput: rg's output read as lines, files and counts, and compared.
func TestRgOutput(t *testing.T) {
	out := []byte("./b/x.go:3\na.go:2\n\nc/d.go:10\n")
	if got := strings.Join(rgLines(out), " "); got != "a.go:2 b/x.go:3 c/d.go:10" {
		t.Errorf("rgLines = %s", got)
	}
	if got := rgCountSum(out); got != 15 {
		t.Errorf("rgCountSum = %d", got)
	}
	cases := []struct {
		wink, rg []string
		want     string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, "same files (2)"},
		{[]string{"a", "c"}, []string{"a", "b"}, "DIFFERENT files: wink 2, rg 2; only wink: 1, such as c; only rg: 1, such as b"},
		{nil, []string{"a"}, "DIFFERENT files: wink 0, rg 1; only rg: 1, such as a"},
	}
	for _, c := range cases {
		if got := compareSets("files", c.wink, c.rg); got != c.want {
			t.Errorf("compareSets(%v, %v) = %q, want %q", c.wink, c.rg, got, c.want)
		}
	}
	if got := compareCounts("total", 3, 4); got != "DIFFERENT total: wink 3, rg 4" {
		t.Errorf("compareCounts = %q", got)
	}
}
