package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// TestGlobMatcher: the compiled glob answers as doublestar does for every
// path under its prefix, and finds the prefix and the cheap forms.
func TestGlobMatcher(t *testing.T) {
	paths := []string{
		"a_test.go", "_test.go", "x/a_test.go", "x/y/z/b_test.go", "x/a_test.go.bak", "x_test.go/y",
		"src/a.go", "src/x/b.go", "src/x/y/c.go", "src.go", "srcx/a.go", "src/a.txt", ".hidden_test.go",
		"docs/a.md", "docs/b.mdx", "a/b/c", "a/b", "a/bc",
	}
	for _, c := range []struct {
		pattern, prefix, name, suffix string
	}{
		{"**/*_test.go", "", "*_test.go", "_test.go"},
		{"src/**/*.go", "src", "*.go", ".go"},
		{"src/x/**/*.go", "src/x", "*.go", ".go"},
		{"**/*.{md,mdx}", "", "*.{md,mdx}", ""},
		{"**/[ab].go", "", "[ab].go", ""},
		{"src/*.go", "src", "", ""},
		{"*.go", "", "", ""},
		{"a/b/c", "a/b", "", ""},
		{"a/b*", "a", "", ""},
		{"**", "", "", ""},
		{"**/x/*.go", "", "", ""},
		{"src/**", "src", "", ""},
		{"**/**/*.go", "", "", ""},
		{"s?c/*.go", "", "", ""},
	} {
		g := compileGlob(c.pattern)
		if g.prefix != c.prefix || g.name != c.name || g.suffix != c.suffix {
			t.Errorf("compileGlob(%q) = prefix %q name %q suffix %q, want %q %q %q", c.pattern, g.prefix, g.name, g.suffix, c.prefix, c.name, c.suffix)
		}
		for _, p := range paths {
			if !within(p, g.prefix) || p == g.prefix {
				continue
			}
			want, _ := doublestar.Match(c.pattern, p)
			if got := g.match(p); got != want {
				t.Errorf("%q matches %q: %v, doublestar says %v", c.pattern, p, got, want)
			}
		}
	}
}

// TestGlobPrefix: a glob whose leading segments name directories walks
// only under them, and finds nothing through a path that is missing, a
// file, ignored, or (on disk) a link to a directory, as the whole walk
// would not; a directory named as path is walked, ignored or not, as
// ripgrep walks a directory it is given.
func TestGlobPrefix(t *testing.T) {
	files := map[string]string{
		".gitignore":     "gen/\n",
		"src/a.go":       "x",
		"src/x/b.go":     "x",
		"src/gen/c.go":   "x",
		"gen/d.go":       "x",
		"file/e.go":      "x",
		"sub/.gitignore": "/deep/\n",
		"sub/deep/f.go":  "x",
		"sub/other/g.go": "x",
		".git/objects/h": "x",
		"src.go":         "x",
		"srcx/i.go":      "x",
		"real/j.go":      "x",
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		b, dir := bk.open(t, files)
		if dir != "" {
			if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		}
		h := newHarnessOver(t, b, dir)
		for _, s := range []step{
			{"glob", `{"pattern":"src/**/*.go"}`, "Found 2 files matching src/**/*.go under /.\n\nsrc/a.go\nsrc/x/b.go", false},
			{"glob", `{"pattern":"src/x/*.go"}`, "Found 1 file matching src/x/*.go under /.\n\nsrc/x/b.go", false},
			{"glob", `{"pattern":"gen/*.go"}`, "Found 0 files matching gen/*.go under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"src/gen/**"}`, "Found 0 files matching src/gen/** under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"missing/**"}`, "Found 0 files matching missing/** under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"src.go/*"}`, "Found 0 files matching src.go/* under /.\n\n(no files match)", false},
			{"glob", `{"pattern":".git/**"}`, "Found 0 files matching .git/** under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"deep/*.go","path":"sub"}`, "Found 0 files matching deep/*.go under sub.\n\n(no files match)", false},
			{"glob", `{"pattern":"other/*.go","path":"sub"}`, "Found 1 file matching other/*.go under sub.\n\nsub/other/g.go", false},
			{"glob", `{"pattern":"link/*.go"}`, "Found 0 files matching link/*.go under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"*.go","path":"gen"}`, "Found 1 file matching *.go under gen.\n\ngen/d.go", false},
			{"grep", `{"pattern":"x","path":"src/gen","output_mode":"files_with_matches"}`, "Found 1 matching file.\n\nsrc/gen/c.go", false},
			{"glob", `{"pattern":"real/*.go"}`, "Found 1 file matching real/*.go under /.\n\nreal/j.go", false},
		} {
			s.check(t, h)
		}
	})
}
