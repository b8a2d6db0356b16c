package workspace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzNormalize checks the normaliser's promises for any input: a path it
// accepts is canonical (no empty, "." or ".." segment, no leading or
// trailing slash, valid UTF-8 without NUL or control characters, within the
// limits) and normalising it again changes nothing.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "/", ".", "a//b/", " /a/b ", "../x", "a/./b", "a\x00b", "\xff", strings.Repeat("a/", 17), "a/" + strings.Repeat("b", 256), "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := Normalize(in)
		if err != nil {
			if _, ok := err.(*PathError); !ok {
				t.Fatalf("Normalize(%q) error %T, want *PathError", in, err)
			}
			return
		}
		if n == "" {
			return
		}
		if !utf8.ValidString(n) || strings.HasPrefix(n, "/") || strings.HasSuffix(n, "/") {
			t.Fatalf("Normalize(%q) = %q", in, n)
		}
		segs := strings.Split(n, "/")
		if len(segs) > MaxSegments {
			t.Fatalf("Normalize(%q) = %q has %d segments", in, n, len(segs))
		}
		for _, s := range segs {
			if s == "" || s == "." || s == ".." || len(s) > MaxSegmentBytes || strings.ContainsAny(s, "\x00\n\r\t") {
				t.Fatalf("Normalize(%q) = %q has segment %q", in, n, s)
			}
		}
		if again, err := Normalize(n); err != nil || again != n {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", in, n, n, again, err)
		}
	})
}

// FuzzDiskBackend feeds random paths and operations to a disk workspace
// whose root sits next to a secret directory and holds links to it.
// Whatever the input, nothing outside the root is written or removed, and
// no operation returns the secret.
func FuzzDiskBackend(f *testing.F) {
	for _, s := range []string{"link_dir/secret.txt", "link_file", "abs_dir/dir/x", "inner/deep/secret.txt", "../outside/secret.txt", "a/b/c", "loop/x", "inside.txt", "/", "dangling/x"} {
		for op := range byte(8) {
			f.Add(s, op, "data")
		}
	}
	fx := newEscapeFixture(f)
	before := fx.outsideState(f)
	b, err := OpenDisk(fx.root, f.TempDir(), nil)
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	w, err := newWorkspace(b, 1<<20)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string, op byte, content string) {
		fx.links(t)
		leak := func(data []byte) {
			if bytes.Contains(data, []byte(secret)) {
				t.Fatalf("op %d on %q returned the secret", op, path)
			}
		}
		switch op % 8 {
		case 0:
			data, _ := w.ReadFile(path)
			leak(data)
		case 1:
			_ = w.WriteFile(path, []byte(content))
		case 2:
			_, _ = w.Remove(path)
		case 3:
			infos, _ := w.List(path)
			for _, in := range infos {
				leak([]byte(in.Path))
			}
		case 4:
			_ = w.Walk(path, func(in Info) error {
				data, _ := w.ReadFile(in.Path)
				leak(data)
				return nil
			})
		case 5:
			u, _ := w.Snapshot()
			_ = w.WriteFile(path, []byte(content))
			_, _ = w.Remove(path + "/x")
			if u != nil {
				_ = u.Restore()
			}
		case 6:
			// A move of path to content, checked as move_file checks it,
			// then undone.
			src, err1 := normalizeFile(path)
			dst, err2 := normalizeFile(content)
			if err1 != nil || err2 != nil || src == dst || within(dst, src) {
				break
			}
			from, err := w.st.stat(src)
			to, errTo := w.st.stat(dst)
			if err != nil || errTo == nil && (to.Dir || from.Dir) || errTo != nil && !errors.Is(errTo, errNotExist) {
				break
			}
			u, _ := w.Snapshot()
			_ = w.st.move(src, dst)
			if u != nil {
				_ = u.Restore()
			}
		case 7:
			if p, err := Normalize(path); err == nil {
				_, _ = w.st.mkdir(p)
				in, _ := w.st.lstat(p)
				leak([]byte(in.Path))
			}
		}
		if v, ok, _ := w.Version(path); ok {
			leak([]byte(v))
		}
		if after := fx.outsideState(t); after != before {
			t.Fatalf("op %d on %q changed what is outside the root:\n%s", op, path, after)
		}
	})
}
