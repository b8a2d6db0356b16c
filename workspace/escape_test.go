package workspace

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

const secret = "SECRET-OUTSIDE-THE-WORKSPACE"

// escapeFixture is a disk workspace next to a directory it must never
// reach, with symbolic links that point there.
type escapeFixture struct {
	base, root, outside string
}

func newEscapeFixture(t testing.TB) *escapeFixture {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	base := t.TempDir()
	f := &escapeFixture{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, filepath.Join(f.outside, "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, c string) {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.outside, "secret.txt"), secret)
	write(filepath.Join(f.outside, "dir", "secret.txt"), secret)
	write(filepath.Join(f.root, "inside.txt"), "inside\n")
	f.links(t)
	return f
}

// links (re)creates the links of the fixture.
func (f *escapeFixture) links(t testing.TB) {
	for name, target := range map[string]string{
		"link_file":  "../outside/secret.txt",
		"link_dir":   "../outside",
		"abs_file":   filepath.Join(f.outside, "secret.txt"),
		"abs_dir":    f.outside,
		"ok_link":    "inside.txt",
		"dangling":   "nowhere",
		"loop":       "loop",
		"inner/deep": "../../outside/dir",
	} {
		p := filepath.Join(f.root, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// outsideState describes everything outside the root.
func (f *escapeFixture) outsideState(t testing.TB) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(f.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == f.root {
			return filepath.SkipDir
		}
		info, _ := d.Info()
		line := p + " " + info.Mode().String()
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			line += " " + string(data)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestNothingEscapesTheRoot tries every way out of a disk workspace through
// the tools: each gets a clear error, no secret is read, nothing outside
// changes.
func TestNothingEscapesTheRoot(t *testing.T) {
	f := newEscapeFixture(t)
	b, err := OpenDisk(f.root, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := newHarnessOver(t, b, f.root)
	before := f.outsideState(t)
	const out = "leads outside the workspace (through a symbolic link); it cannot be used."
	steps := []step{
		{"read_file", `{"file_path":"link_file"}`, "Path link_file " + out, true},
		{"read_file", `{"file_path":"abs_file"}`, "Path abs_file " + out, true},
		{"read_file", `{"file_path":"link_dir/secret.txt"}`, "Path link_dir/secret.txt " + out, true},
		{"read_file", `{"file_path":"abs_dir/dir/secret.txt"}`, "Path abs_dir/dir/secret.txt " + out, true},
		{"read_file", `{"file_path":"inner/deep/secret.txt"}`, "Path inner/deep/secret.txt " + out, true},
		{"read_file", `{"file_path":"../outside/secret.txt"}`, "Path segments may not include '.' or '..'.", true},
		{"read_file", `{"file_path":"/etc/passwd"}`, "File does not exist: etc/passwd", true},
		{"read_file", `{"file_path":"loop"}`, "Path loop " + out, true},
		{"read_file", `{"file_path":"ok_link"}`, "Read file ok_link (lines 1-1 of 1).\n\n   1 | inside", false},
		{"write_file", `{"file_path":"link_dir/new.txt","content":"x"}`, "Path link_dir/new.txt " + out, true},
		{"write_file", `{"file_path":"abs_dir/new.txt","content":"x"}`, "Path abs_dir/new.txt " + out, true},
		{"write_file", `{"file_path":"link_file","content":"x","overwrite":true}`, "Path link_file " + out, true},
		{"write_file", `{"file_path":"inner/deep/x/y.txt","content":"x"}`, "Path inner/deep/x/y.txt " + out, true},
		{"write_file", `{"file_path":"dangling/x.txt","content":"x"}`, "Cannot use dangling/x.txt: dangling is a file, not a directory.", true},
		{"edit_file", `{"file_path":"link_file","old_string":"SECRET","new_string":"x"}`, "Path link_file " + out, true},
		{"apply_edits", `{"edits":[{"op":"write","file_path":"fine.txt","content":"x"},{"op":"write","file_path":"link_dir/new.txt","content":"x"}]}`, "edits[1] (write link_dir/new.txt) failed: Path link_dir/new.txt " + out + " No edit was applied.", true},
		{"ls", `{"path":"link_dir"}`, "Path link_dir " + out, true},
		{"ls", `{}`, "Listed /: 3 entries.\n\ninner/\ninside.txt (7 bytes)\nok_link (7 bytes)", false},
		{"glob", `{"pattern":"**"}`, "Found 2 files matching ** under /.\n\ninside.txt\nok_link", false},
		{"grep", `{"pattern":"SECRET"}`, "Found 0 matches in 0 files.\n\n(no matches)", false},
		{"grep", `{"pattern":"x","path":"link_dir"}`, "Path link_dir " + out, true},
		{"rm", `{"path":"link_dir/secret.txt"}`, "Path link_dir/secret.txt " + out, true},
		{"rm", `{"path":"abs_dir/dir"}`, "Path abs_dir/dir " + out, true},
		{"read_multiple_files", `{"paths":["link_file","ok_link"]}`, "Read 1 file; 1 could not be read.\n\n== link_file: error ==\nPath link_file " + out + "\n\n== ok_link (1 line of 1) ==\n   1 | inside", false},
		{"file_info", `{"path":"link_file"}`, "Path link_file " + out, true},
		{"file_info", `{"path":"link_dir/secret.txt"}`, "Path link_dir/secret.txt " + out, true},
		{"file_info", `{"path":"ok_link"}`, "Info for ok_link.\n\ntype: symlink (to a file)...", false},
		{"directory_tree", `{"path":"link_dir"}`, "Path link_dir " + out, true},
		{"directory_tree", `{"all":true}`, "Tree of /, 3 levels, 3 entries.\n\ninner/\ninside.txt (7 bytes)\nok_link (symlink)", false},
		{"create_directory", `{"path":"link_dir/new"}`, "Path link_dir/new " + out, true},
		{"create_directory", `{"path":"abs_dir"}`, "Path abs_dir " + out, true},
		{"move_file", `{"source":"link_dir/secret.txt","destination":"stolen.txt"}`, "Path link_dir/secret.txt " + out, true},
		{"move_file", `{"source":"inside.txt","destination":"link_dir/inside.txt"}`, "Path link_dir/inside.txt " + out, true},
		{"move_file", `{"source":"inside.txt","destination":"inner/deep/inside.txt"}`, "Path inner/deep/inside.txt " + out, true},
		// Removing a link removes the link, never what it points to.
		{"rm", `{"path":"link_dir"}`, "Removed file link_dir.", false},
		{"rm", `{"path":"inner"}`, "Removed directory inner (1 file).", false},
	}
	for _, s := range steps {
		s.check(t, h)
		if after := f.outsideState(t); after != before {
			t.Fatalf("%s %s changed what is outside the root:\n%s", s.tool, s.args, after)
		}
	}
	if _, err := os.Stat(filepath.Join(f.root, "fine.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed apply_edits left fine.txt behind: %v", err)
	}
}

// TestBadPaths checks the path rules through the Go API, which unlike JSON
// can carry any bytes.
func TestBadPaths(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		b, _ := bk.open(t, map[string]string{"ok.txt": "ok"})
		w, err := newWorkspace(b, DefaultMaxFileBytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ path, want string }{
			{"a\x00b", "Path must not contain NUL bytes."},
			{"bad\xffname", "Path must be valid UTF-8."},
			{"a/\x01", "Path must not contain control characters."},
			{strings.Repeat("n", 256), "is 256 bytes; the limit is 255 bytes per segment."},
			{strings.Repeat("d/", 17), "Path has more than 16 segments; the limit is 16."},
			{"a/../b", "Path segments may not include '.' or '..'."},
			{"./a", "Path segments may not include '.' or '..'."},
			{"/ a", "Path segment \" a\" starts or ends with whitespace."},
		} {
			err := w.WriteFile(c.path, []byte("x"))
			var pe *PathError
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, c.want) {
				t.Errorf("WriteFile(%q) = %v, want a PathError containing %q", c.path, err, c.want)
			}
			if _, err := w.ReadFile(c.path); !errors.As(err, &pe) {
				t.Errorf("ReadFile(%q) = %v, want a PathError", c.path, err)
			}
		}
		infos, err := w.List("")
		if err != nil || len(infos) != 1 {
			t.Errorf("List = %v, %v; want only ok.txt", infos, err)
		}
	})
}

// TestUnaddressableNamesOnDisk: names a path cannot hold are not listed,
// and temporary files of atomic writes never show.
func TestUnaddressableNamesOnDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a file system that takes any bytes in names")
	}
	dir := t.TempDir()
	for _, name := range []string{"bad\xffname", "ctl\x01", tmpPrefix + "0123", "ok.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := OpenDisk(dir, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := newHarnessOver(t, b, dir)
	step{"ls", `{}`, "Listed /: 1 entry.\n\nok.txt (1 byte)", false}.check(t, h)
	step{"glob", `{"pattern":"**"}`, "Found 1 file matching ** under /.\n\nok.txt", false}.check(t, h)
}

// TestSymlinkSwapRace swaps a directory for a link to the outside while
// writes go through the path: os.Root resolves each access beneath the root
// atomically, so no write ever lands outside.
func TestSymlinkSwapRace(t *testing.T) {
	f := newEscapeFixture(t)
	b, err := OpenDisk(f.root, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, _ := b.impl.open()
	swap := filepath.Join(f.root, "swap")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.RemoveAll(swap)
			if i%2 == 0 {
				_ = os.Mkdir(swap, 0o755)
			} else {
				_ = os.Symlink(f.outside, swap)
			}
		}
	}()
	for i := range 2000 {
		_ = st.writeFile("swap/planted.txt", []byte("planted"))
		if data, err := st.readFile("swap/secret.txt", 0); err == nil && bytes.Contains(data, []byte(secret)) {
			t.Fatalf("iteration %d read the secret through the swapped link", i)
		}
		_, _ = st.remove("swap/secret.txt")
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(f.outside, "planted.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a write landed outside the root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.outside, "secret.txt")); err != nil {
		t.Fatalf("a remove reached outside the root: %v", err)
	}
}
