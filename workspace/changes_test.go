package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// TestChanges: what a call changed since its snapshot, on each backend:
// files written, rewritten, rewritten with the same content, removed,
// and (on disk, whose directories live outside the stored state) the
// directories made and removed.
func TestChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		do       func(w *Workspace) error
		memory   []string
		disk     []string
		outside  bool
		contents map[string][2]string // path: before, after ("-" for none)
	}{
		{
			name:   "nothing",
			do:     func(*Workspace) error { return nil },
			memory: nil, disk: nil,
		},
		{
			name: "rewrite the same content",
			do:   func(w *Workspace) error { return w.WriteFile("a.txt", []byte("a\n")) },
		},
		{
			name: "write, create and remove",
			do: func(w *Workspace) error {
				if err := w.WriteFile("a.txt", []byte("A\n")); err != nil {
					return err
				}
				if err := w.WriteFile("new/deep/c.txt", []byte("c\n")); err != nil {
					return err
				}
				_, err := w.Remove("dir")
				return err
			},
			memory:   []string{"a.txt", "dir/b.txt", "new/deep/c.txt"},
			disk:     []string{"a.txt", "dir/", "dir/b.txt", "new/", "new/deep/", "new/deep/c.txt"},
			contents: map[string][2]string{"a.txt": {"a\n", "A\n"}, "dir/b.txt": {"b\n", "-"}, "new/deep/c.txt": {"-", "c\n"}},
		},
		{
			name: "write then put back",
			do: func(w *Workspace) error {
				if err := w.WriteFile("a.txt", []byte("A\n")); err != nil {
					return err
				}
				return w.WriteFile("a.txt", []byte("a\n"))
			},
		},
	} {
		for _, bk := range backends {
			t.Run(tc.name+"/"+bk.name, func(t *testing.T) {
				b, _ := bk.open(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
				w, err := newWorkspace(b, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, err := w.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Release()
				if err := tc.do(w); err != nil {
					t.Fatal(err)
				}
				changes, err := r.(session.Changer).Changes()
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range changes {
					p := c.Path
					if c.Dir {
						p += "/"
					}
					got = append(got, p)
					if c.Outside != (bk.name == "disk") {
						t.Errorf("%s: outside %v", p, c.Outside)
					}
					if want, ok := tc.contents[c.Path]; ok && !c.Dir {
						if g := [2]string{shown(c.Before, c.Existed), shown(c.After, c.Exists)}; g != want {
							t.Errorf("%s: before, after %q, want %q", p, g, want)
						}
					}
				}
				want := tc.memory
				if bk.name == "disk" {
					want = tc.disk
				}
				if !slices.Equal(got, want) {
					t.Errorf("changes %v, want %v", got, want)
				}
			})
		}
	}
}

func shown(data []byte, exists bool) string {
	if !exists {
		return "-"
	}
	return string(data)
}

// TestFilesOnDisk: File reads what is at a path, PutFile and PutDir put
// it back, as changes of the current call that its restore undoes.
func TestFilesOnDisk(t *testing.T) {
	b, dir := backends[1].open(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	w, err := newWorkspace(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path        string
		data        string
		exists, isD bool
	}{
		{"a.txt", "a\n", true, false},
		{"d", "", false, true},
		{"missing", "", false, false},
		{"a.txt/under", "", false, false},
	} {
		data, exists, isDir, err := w.File(tc.path)
		if err != nil || string(data) != tc.data || exists != tc.exists || isDir != tc.isD {
			t.Errorf("File(%s) = %q, %v, %v, %v", tc.path, data, exists, isDir, err)
		}
	}
	r, err := w.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		w.PutFile("a.txt", []byte("A\n"), true),
		w.PutFile("d/b.txt", nil, false),
		w.PutDir("d", false),
		w.PutDir("e/f", true),
		w.PutFile("missing", nil, false),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if got := tree(t, dir); got != "a.txt=A\n e/ e/f/" {
		t.Errorf("after: %q", got)
	}
	if err := r.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); got != "a.txt=a\n d/ d/b.txt=b\n" {
		t.Errorf("restored: %q", got)
	}
}

// tree lists dir: each directory with a trailing slash, each file with
// its content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out = append(out, filepath.ToSlash(rel)+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		out = append(out, fmt.Sprintf("%s=%s", filepath.ToSlash(rel), b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}
