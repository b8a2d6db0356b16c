package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gitCheckout makes a git-like checkout: a .git directory holding a pack
// over the 64 MiB mount budget (sparse, so it costs no disk), a .gitignore
// with patterns, a nested .gitignore and a dot file that is not ignored.
// Every text file holds "needle".
func gitCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range map[string]string{
		".git/HEAD":      "ref: refs/heads/main\n",
		".gitignore":     "*.log\nbuild/\n",
		".env":           "needle=1\n",
		"main.go":        "package main // needle\n",
		"app.log":        "needle in a log\n",
		"build/out.go":   "package build // needle\n",
		"sub/.gitignore": "gen.go\n",
		"sub/gen.go":     "package sub // needle, generated\n",
		"sub/x.go":       "package sub // needle\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pack := filepath.Join(dir, ".git", "objects", "pack", "pack-1.pack")
	if err := os.MkdirAll(filepath.Dir(pack), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(pack)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(65 << 20); err != nil {
		t.Fatal(err)
	}
	return dir
}

// structured calls a tool and decodes its structured content into out.
func (p *proc) structured(id int, tool string, args map[string]any, out any) {
	p.t.Helper()
	f := p.call(id, "tools/call", callTool(tool, args))
	r := decodeToolResult(p.t, f)
	var env struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if r.IsError || json.Unmarshal(f.Result, &env) != nil || json.Unmarshal(env.StructuredContent, out) != nil {
		p.t.Fatalf("%s %v: %s", tool, args, f.Result)
	}
}

// listing is the structured result of ls.
type listing struct {
	Entries []struct {
		Name string `json:"name"`
	} `json:"entries"`
	Hidden int `json:"hidden"`
}

func (l listing) names() []string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Name)
	}
	return out
}

// TestGitCheckout: a mount of a git checkout copies neither .git nor the
// ignored files, and so succeeds where .git is over the byte budget; a
// disk workspace's ls, glob and grep leave them out too, ls hides dot
// names unless all is true, and --include-ignored shows everything (and
// then the mount goes over the budget).
func TestGitCheckout(t *testing.T) {
	repo := gitCheckout(t)
	var glob struct {
		Files []string `json:"files"`
	}
	var grep struct {
		Matches []struct {
			Path string `json:"path"`
		} `json:"matches"`
	}
	var ls listing
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}

	t.Run("mount", func(t *testing.T) {
		p := start(t, "", "--mount", repo+":repo", "--store", "memory")
		p.initialize()
		p.structured(1, "glob", map[string]any{"pattern": "**"}, &glob)
		check("mounted files", glob.Files, []string{"repo/.env", "repo/.gitignore", "repo/main.go", "repo/sub/.gitignore", "repo/sub/x.go"})
	})

	t.Run("mount_include_ignored", func(t *testing.T) {
		p := start(t, "", "--mount", repo+":repo", "--store", "memory", "--include-ignored")
		if code := p.wait(); code == 0 || !strings.Contains(p.stderr.String(), "byte budget") {
			t.Errorf("a mount with .git over the budget: exit %d, stderr:\n%s", code, p.stderr)
		}
	})

	t.Run("disk", func(t *testing.T) {
		p := start(t, "", "--workspace", repo, "--state-dir", t.TempDir(), "--store", "memory")
		p.initialize()
		p.structured(1, "glob", map[string]any{"pattern": "**/*.go"}, &glob)
		check("glob", glob.Files, []string{"main.go", "sub/x.go"})
		p.structured(2, "grep", map[string]any{"pattern": "needle"}, &grep)
		var paths []string
		for _, m := range grep.Matches {
			paths = append(paths, m.Path)
		}
		check("grep", paths, []string{".env", "main.go", "sub/x.go"})
		p.structured(3, "ls", map[string]any{}, &ls)
		check("ls", ls.names(), []string{"sub", "main.go"})
		check("ls hidden", ls.Hidden, 5)
		ls = listing{}
		p.structured(4, "ls", map[string]any{"all": true}, &ls)
		check("ls all", ls.names(), []string{".git", "build", "sub", ".env", ".gitignore", "app.log", "main.go"})
		r := decodeToolResult(t, p.call(5, "tools/call", callTool("read_file", map[string]any{"file_path": "app.log"})))
		if r.IsError || !strings.Contains(r.Content[0].Text, "needle in a log") {
			t.Errorf("read_file of an ignored file: %+v", r)
		}
	})

	t.Run("disk_include_ignored", func(t *testing.T) {
		p := start(t, "", "--workspace", repo, "--state-dir", t.TempDir(), "--store", "memory", "--include-ignored")
		p.initialize()
		p.structured(1, "glob", map[string]any{"pattern": "**/*.go"}, &glob)
		check("glob", glob.Files, []string{"build/out.go", "main.go", "sub/gen.go", "sub/x.go"})
		p.structured(2, "glob", map[string]any{"pattern": ".git/**"}, &glob)
		check("glob .git", glob.Files, []string{".git/HEAD", ".git/objects/pack/pack-1.pack"})
		ls = listing{}
		p.structured(3, "ls", map[string]any{}, &ls)
		check("ls", ls.names(), []string{"build", "sub", "app.log", "main.go"})
	})
}
