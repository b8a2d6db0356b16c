package gitignore

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWildmatch pins wildmatch's cases, most of them from git's t3070.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"", "", true},
		{"???", "foo", true},
		{"??", "foo", false},
		{"*", "foo", true},
		{"f*", "foo", true},
		{"*f", "foo", false},
		{"*foo*", "foo", true},
		{"*ob*a*r*", "foobar", true},
		{"*ab", "aaaaaaabababab", true},
		{`foo\*`, "foo*", true},
		{`foo\*bar`, "foobar", false},
		{`f\\oo`, `f\oo`, true},
		{"*[al]?", "ball", true},
		{"[ten]", "ten", false},
		{"**[!te]", "ten", true},
		{"**[!ten]", "ten", false},
		{"t[a-g]n", "ten", true},
		{"t[!a-g]n", "ten", false},
		{"t[!a-g]n", "ton", true},
		{"t[^a-g]n", "ton", true},
		{"a[]]b", "a]b", true},
		{"a[]-]b", "a-b", true},
		{"a[]-]b", "a]b", true},
		{"a[]-]b", "aab", false},
		{"a[]a-]b", "aab", true},
		{"]", "]", true},
		{"foo*bar", "foo/baz/bar", false},
		{"foo**bar", "foo/baz/bar", false},
		{"foo**bar", "foobazbar", true},
		{"foo/**/bar", "foo/baz/bar", true},
		{"foo/**/**/bar", "foo/baz/bar", true},
		{"foo/**/bar", "foo/b/a/z/bar", true},
		{"foo/**/bar", "foo/bar", true},
		{"foo/**/**/bar", "foo/bar", true},
		{"foo?bar", "foo/bar", false},
		{"foo[/]bar", "foo/bar", false},
		{"foo[^a-z]bar", "foo/bar", false},
		{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo-bar", true},
		{"**/foo", "foo", true},
		{"**/foo", "XXX/foo", true},
		{"**/foo", "bar/baz/foo", true},
		{"*/foo", "bar/baz/foo", false},
		{"**/bar*", "foo/bar/baz", false},
		{"**/bar/*", "deep/foo/bar/baz", true},
		{"**/bar/*", "deep/foo/bar/baz/", false},
		{"**/bar/**", "deep/foo/bar/baz/", true},
		{"**/bar/*", "deep/foo/bar", false},
		{"**/bar/**", "deep/foo/bar/", true},
		{"**/bar**", "foo/bar/baz", false},
		{"*/bar/**", "foo/bar/baz/x", true},
		{"*/bar/**", "deep/foo/bar/baz/x", false},
		{"**/bar/*/*", "deep/foo/bar/baz/x", true},
		{"a/**", "a", false},
		{"a/**", "a/b/c", true},
		{"[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true},
		{"[[:digit:][:upper:][:space:]]", "a", false},
		{"[[:digit:][:upper:][:space:]]", "A", true},
		{"[[:digit:][:upper:][:spaci:]]", "1", false},
		{"[a-c[:digit:]x-z]", "5", true},
		{"[a-c[:digit:]x-z]", "q", false},
		{`[\]]`, "]", true},
		{`[\-_]`, "-", true},
		{"[!]-]", "]", false},
		{"[!]-]", "a", true},
		{`\`, `\`, false},
		{"*/", "foo", false},
		{"a[b", "a[b", false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true},
		{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/X/70/iso8859/1", false},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", false},
	} {
		if got := Wildmatch(c.pattern, c.text); got != c.want {
			t.Errorf("Wildmatch(%q, %q) = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}

// TestListMatch pins a list's answers: the last match wins, negation,
// directories only, anchored and basename patterns, escapes and spaces.
func TestListMatch(t *testing.T) {
	l := Parse([]byte("\xef\xbb\xbf*.log\n!keep.log\nbuild/\n/top\ndoc/*.html\n\\#x\n\\!y\ntrail\\ \nsp   \n# c\n\n*.tmp\r\n"))
	for _, c := range []struct {
		rel          string
		dir          bool
		ign, matched bool
	}{
		{"a.log", false, true, true},
		{"x/keep.log", false, false, true},
		{"build", true, true, true},
		{"build", false, false, false},
		{"x/build", true, true, true},
		{"top", false, true, true},
		{"x/top", false, false, false},
		{"doc/a.html", false, true, true},
		{"doc/x/a.html", false, false, false},
		{"#x", false, true, true},
		{"!y", false, true, true},
		{"trail ", false, true, true},
		{"sp", false, true, true},
		{"sp ", false, false, false},
		{"a.tmp", false, true, true},
		{"main.go", false, false, false},
	} {
		ign, m := l.Match(c.rel, c.dir)
		if ign != c.ign || m != c.matched {
			t.Errorf("Match(%q, dir=%v) = %v, %v; want %v, %v", c.rel, c.dir, ign, m, c.ign, c.matched)
		}
	}
}

// trickyIgnores and trickyFiles are a tree of cases where .gitignore
// semantics are easy to get wrong.
var trickyIgnores = map[string]string{
	".gitignore": strings.Join([]string{
		"# comment", "*.log", "!important.log", "build/", "/top.txt", "doc/*.html",
		"**/gen/*.go", "a/**/z", "logs/**", "!logs/keep.txt", `\#hash`, `\!bang`,
		`trail\ `, "spaced   ", "*.py[cod]", "[[:digit:]]*.num", "dir_only/", "foo/bar/",
		"vendor", "!vendor/keep.go", "x?y", "deep/**/", "[!a]bc.cls", "lit/path",
		"*.LOG.x", "nest/**/mid/*.c", "!/again/", "again", "*~", ".*.swp",
	}, "\n") + "\n",
	"sub/.gitignore":       "!*.log\n*.tmp\n/anchored.txt\nnested/\n!/build/\n",
	"sub/deep2/.gitignore": "*\n!*.keep\n!*/\n",
}

var trickyFiles = []string{
	"a.log", "important.log", "sub/b.log", "sub/c.tmp", "c.tmp", "top.txt", "sub/top.txt",
	"anchored.txt", "sub/anchored.txt", "sub/deeper/anchored.txt",
	"build/x.go", "src/build/y.go", "other/build", "sub/build/z.go",
	"doc/index.html", "doc/sub/index.html", "doc/readme.md",
	"gen/x.go", "p/gen/x.go", "p/q/gen/x.go", "p/gen/x.txt", "p/gen/deep/x.go",
	"a/z", "a/b/z", "a/b/c/z", "a/zz",
	"logs/one.txt", "logs/keep.txt", "logs/in/two.txt",
	"#hash", "!bang", "trail ", "spaced", "spaced x",
	"m.pyc", "m.pyo", "m.py", "1.num", "a1.num",
	"dir_only/f", "q/dir_only/f", "r/dir_only",
	"foo/bar/f", "x/foo/bar/f",
	"vendor/keep.go", "v/vendor",
	"xay", "x/y", "xy",
	"deep/f", "deep/a/f", "deep/a/b/f",
	"bbc.cls", "abc.cls",
	"lit/path", "x/lit/path",
	"A.LOG.x", "A.log.x",
	"nest/mid/a.c", "nest/q/r/mid/b.c", "nest/mid/sub/c.c",
	"again/f", "sub/again/f",
	"edit~", ".f.swp", "f.swp",
	"sub/deep2/a.keep", "sub/deep2/b.txt", "sub/deep2/in/c.keep", "sub/deep2/in/d.txt",
	"sub/nested/n.go", "nested/n.go",
}

// TestAgainstGit walks a tree of tricky cases with the lists, entering
// no ignored directory and testing each entry at its own name against the
// lists of the .gitignore files above it (the deepest first), and checks
// that it keeps exactly the files git ls-files -o --exclude-standard
// lists. Skipped without git.
func TestAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range trickyIgnores {
		write(p, c)
	}
	for _, p := range trickyFiles {
		write(p, "x\n")
	}
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	cmd = exec.Command("git", "-c", "core.quotepath=off", "ls-files", "-z", "-o", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(want)

	type level struct {
		dir  string
		list *List
		up   *level
	}
	var got []string
	var walk func(dir string, up *level)
	walk = func(dir string, up *level) {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), ".gitignore")); err == nil {
			up = &level{dir, Parse(data), up}
		}
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if e.Name() == ".git" {
				continue
			}
			ignored := false
			for l := up; l != nil; l = l.up {
				rel := strings.TrimPrefix(p, l.dir+"/")
				if ign, ok := l.list.Match(rel, e.IsDir()); ok {
					ignored = ign
					break
				}
			}
			switch {
			case ignored:
			case e.IsDir():
				walk(p, up)
			default:
				got = append(got, p)
			}
		}
	}
	walk("", nil)
	t.Logf("git keeps %d of %d files", len(want), len(trickyFiles))
	slices.Sort(got)
	for _, p := range want {
		if !slices.Contains(got, p) {
			t.Errorf("git keeps %q, the lists leave it out", p)
		}
	}
	for _, p := range got {
		if !slices.Contains(want, p) {
			t.Errorf("git leaves out %q, the lists keep it", p)
		}
	}
}

// FuzzMatch: any .gitignore content, pattern and path are matched without
// a panic, and a path matches itself with every byte escaped.
func FuzzMatch(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n/top\n", "a/b.log", false)
	f.Add("[[:alpha:]-]\n**/x/**\n\\", "x/y", true)
	f.Add("a[!]-]b\n[a-\n[[:nope:]]\n***/**/\n", "a]b", false)
	f.Fuzz(func(t *testing.T, data, rel string, dir bool) {
		Parse([]byte(data)).Match(rel, dir)
		Wildmatch(data, rel)
		var escaped strings.Builder
		for i := 0; i < len(rel); i++ {
			escaped.WriteByte('\\')
			escaped.WriteByte(rel[i])
		}
		if !Wildmatch(escaped.String(), rel) {
			t.Errorf("%q does not match itself escaped", rel)
		}
	})
}
