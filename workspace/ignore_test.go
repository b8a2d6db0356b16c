package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoreRulesSkips pins what the rules leave out: .git wherever it is,
// the patterns of a .gitignore below its directory only, and a deeper
// file's negation over a shallower file's pattern.
func TestIgnoreRulesSkips(t *testing.T) {
	root := ignoreRules{}.with("", []byte("# comment\n*.log\nbuild/\n/top.txt\n\n*.tmp\r\n"))
	sub := root.with("sub", []byte("gen.go\n!keep.log\n"))
	for _, c := range []struct {
		rules ignoreRules
		path  string
		dir   bool
		want  bool
	}{
		{ignoreRules{}, ".git", true, true},
		{ignoreRules{}, "vendor/x/.git", false, true},
		{ignoreRules{}, ".github", true, false},
		{root, "app.log", false, true},
		{root, "build", true, true},
		{root, "build", false, false},
		{root, "top.txt", false, true},
		{sub, "sub/top.txt", false, false},
		{root, "gen.go", false, false},
		{sub, "sub/gen.go", false, true},
		{sub, "sub/deep/gen.go", false, true},
		{sub, "sub/keep.log", false, false},
		{sub, "sub/other.log", false, true},
		{root, "main.go", false, false},
		{root, "a/b.tmp", false, true},
	} {
		if got := c.rules.skips(c.path, c.dir); got != c.want {
			t.Errorf("skips(%q, dir=%v) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}

// checkout is a git-like tree: a .git directory, a .gitignore with
// patterns and a nested one, and a dot file that is not ignored.
var checkout = map[string]string{
	".git/HEAD":           "ref: refs/heads/main\n",
	".git/objects/pack/p": "needle in the object store\n",
	".gitignore":          "*.log\nbuild/\n",
	".env":                "needle=1\n",
	"main.go":             "package main // needle\n",
	"app.log":             "needle in a log\n",
	"build/out.go":        "package build // needle\n",
	"sub/.gitignore":      "gen.go\n",
	"sub/gen.go":          "package sub // needle, generated\n",
	"sub/x.go":            "package sub // needle\n",
}

// TestIgnoredFiles: glob, grep and ls leave out .git and what .gitignore
// files ignore, ls hides dot names unless all, a named ignored file stays
// readable, and a backend that includes ignored files shows them all.
func TestIgnoredFiles(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, checkout)
		for _, s := range []step{
			{"glob", `{"pattern":"**"}`, "Found 5 files matching ** under /.\n\n.env\n.gitignore\nmain.go\nsub/.gitignore\nsub/x.go", false},
			{"grep", `{"pattern":"needle"}`, "Found 3 matches in 3 files.\n\n.env:1: needle=1\nmain.go:1: package main // needle\nsub/x.go:1: package sub // needle", false},
			{"grep", `{"pattern":"needle","path":"sub"}`, "Found 1 match in 1 file.\n\nsub/x.go:1: package sub // needle", false},
			{"ls", `{}`, "Listed /: 2 entries. 5 entries hidden (dot names or ignored by .gitignore); all: true lists them.\n\nsub/\nmain.go (23 bytes)", false},
			{"ls", `{"path":"sub"}`, "Listed sub: 1 entry. 2 entries hidden (dot names or ignored by .gitignore); all: true lists them.\n\nx.go (22 bytes)", false},
			{"ls", `{"all":true}`, "Listed /: 7 entries.\n\n.git/\nbuild/\nsub/\n.env (9 bytes)\n.gitignore (13 bytes)\napp.log (16 bytes)\nmain.go (23 bytes)", false},
		} {
			s.check(t, h)
		}
		if got, _ := h.call("read_file", `{"file_path":"app.log"}`); !strings.Contains(got, "needle in a log") {
			t.Errorf("read_file of an ignored file: %q", got)
		}

		b, dir := bk.open(t, checkout)
		b.includeIgnored = true
		all := newHarnessOver(t, b, dir)
		step{"glob", `{"pattern":"**/*.go"}`, "Found 4 files matching **/*.go under /.\n\nbuild/out.go\nmain.go\nsub/gen.go\nsub/x.go", false}.check(t, all)
		step{"grep", `{"pattern":"object store"}`, "Found 1 match in 1 file.\n\n.git/objects/pack/p:1: needle in the object store", false}.check(t, all)
		step{"ls", `{}`, "Listed /: 4 entries. 3 entries hidden (dot names or ignored by .gitignore); all: true lists them.\n\nbuild/\nsub/\napp.log (16 bytes)\nmain.go (23 bytes)", false}.check(t, all)
	})
}

// TestMountsIgnore: a mount leaves out .git and ignored files, so a
// checkout whose .git is over the budget mounts; IncludeIgnored copies
// them and then goes over it.
func TestMountsIgnore(t *testing.T) {
	host := t.TempDir()
	files := map[string]string{".git/objects/pack/big": strings.Repeat("x", 4096)}
	for p, c := range checkout {
		files[p] = c
	}
	for p, c := range files {
		full := filepath.Join(host, filepath.FromSlash(p))
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Mounts: []Mount{{Host: host, Path: "repo"}}, MaxBytes: 1024}
	b, err := Open(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := newWorkspace(b, 0)
	var got []string
	_ = w.st.walk("", func(in Info) error {
		if !in.Dir {
			got = append(got, in.Path)
		}
		return nil
	})
	if want := "repo/.env repo/.gitignore repo/main.go repo/sub/.gitignore repo/sub/x.go"; strings.Join(got, " ") != want {
		t.Errorf("mounted %s, want %s", strings.Join(got, " "), want)
	}
	cfg.IncludeIgnored = true
	if _, err := Open(cfg, quiet); err == nil || !strings.Contains(err.Error(), "byte budget") {
		t.Errorf("IncludeIgnored over the budget: %v", err)
	}
	cfg.MaxBytes = 0
	if b, err = Open(cfg, quiet); err != nil {
		t.Fatal(err)
	}
	w, _ = newWorkspace(b, 0)
	n := 0
	_ = w.Walk("", func(Info) error { n++; return nil })
	if n != len(files) {
		t.Errorf("IncludeIgnored mounted %d files, want %d", n, len(files))
	}
}
