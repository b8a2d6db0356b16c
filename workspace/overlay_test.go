package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// openStill opens a backend on f without the repair, so that a call left
// by a dead process stays in flight until the test puts it back.
func (f *diskFixture) openStill() *diskBackend {
	f.t.Helper()
	b, err := openDisk(f.dir, f.state, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { b.Close() })
	return b.impl.(*diskBackend)
}

// committedView returns the view of b's workspace that a reader outside
// the calls gets (Workspace.Freeze).
func committedView(t *testing.T, b *diskBackend) store {
	t.Helper()
	st, err := b.open()
	must(t, err)
	w := (&Workspace{st: st, kind: "disk"}).Freeze().(*Workspace)
	if _, ok := w.st.(*committedStore); !ok {
		t.Fatalf("the frozen disk workspace reads through %T", w.st)
	}
	return w.st
}

// dumpStore describes what st shows: the files a walk gives (with the
// ignore rules), each with its size and content as readFile reads it and
// its version, then every directory's listing, then stat of each of
// probes.
func dumpStore(t *testing.T, st store, probes ...string) string {
	t.Helper()
	w := &Workspace{st: st, kind: "disk"}
	var b strings.Builder
	must(t, w.walk("", func(in Info) error {
		data, err := st.readFile(in.Path, 0)
		if err != nil {
			return fmt.Errorf("readFile(%s): %w", in.Path, err)
		}
		opened, err := in.open()
		if err != nil {
			return fmt.Errorf("open(%s): %w", in.Path, err)
		}
		read, err := opened.read(new([]byte), 0)
		if err != nil || string(read) != string(data) {
			return fmt.Errorf("open(%s) reads %q, %v; readFile %q", in.Path, read, err, data)
		}
		v, ok, err := st.version(in.Path)
		if err != nil || !ok || v != hashVersion(data) {
			return fmt.Errorf("version(%s) = %s, %v, %v", in.Path, v, ok, err)
		}
		fmt.Fprintf(&b, "%s %d %q\n", in.Path, in.Size, data)
		return nil
	}))
	var list func(p string)
	list = func(p string) {
		infos, err := st.list(p)
		must(t, err)
		for _, in := range infos {
			fmt.Fprintf(&b, "ls %q: %s dir=%v size=%d\n", p, in.Path, in.Dir, in.Size)
			if in.Dir {
				list(in.Path)
			}
		}
	}
	list("")
	for _, p := range probes {
		in, err := st.stat(p)
		fmt.Fprintf(&b, "stat %s: dir=%v size=%d err=%v\n", p, in.Dir, in.Size, err)
		if err == nil && in.Dir {
			err = st.walk(p, func(Info) error { return nil })
			fmt.Fprintf(&b, "walk %s: err=%v\n", p, err)
		}
	}
	return b.String()
}

// overlayFiles are the files TestCommittedViewOfADiskWorkspace starts
// with.
var overlayFiles = map[string]string{
	".gitignore":       "secret.txt\n",
	"secret.txt":       "ignored",
	"keep.txt":         "keep",
	"mod.txt":          "old",
	"gone.txt":         "bye",
	"old/name.txt":     "moved",
	"d/x.txt":          "x",
	"d/e/y.txt":        "y",
	"r/z.txt":          "z",
	"big/changed.bin":  strings.Repeat("0123456789", 1000),
	"big/untouched.md": "# untouched",
	"sub/.gitignore":   "hidden.txt\n",
	"sub/hidden.txt":   "ignored too",
	"sub/shown.txt":    "shown",
	"f2d":              "a file, then a directory",
	"d2f/inner.txt":    "in a directory, then gone",
}

// overlayProbes are the paths whose stat dumpStore reports: the calls'
// new paths among them.
var overlayProbes = []string{"mod.txt", "new.txt", "newdir", "newdir/sub/f.txt", "gone.txt", "renamed.txt",
	"old/name.txt", "d", "d/e/y.txt", "r", "r2", "r2/z.txt", "keep.txt/under", "mod.txt/under",
	"f2d", "f2d/inner.txt", "d2f", "d2f/inner.txt", "sub/.gitignore"}

// overlayCall changes every kind of path: it modifies files, creates one
// and a directory with a file in it, removes a file and a directory,
// renames a file and a directory, puts a directory where a file was and
// a file where a directory was, and removes the .gitignore files.
func overlayCall(t *testing.T) func(s *diskStore) {
	return func(s *diskStore) {
		must(t, s.writeFile("mod.txt", []byte("new")))
		must(t, s.writeFile("big/changed.bin", []byte("short now")))
		must(t, s.writeFile("new.txt", []byte("created")))
		must(t, s.writeFile("newdir/sub/f.txt", []byte("in a new directory")))
		_, err := s.remove("gone.txt")
		must(t, err)
		must(t, s.move("old/name.txt", "renamed.txt"))
		_, err = s.remove("d")
		must(t, err)
		must(t, s.move("r", "r2"))
		_, err = s.remove(".gitignore")
		must(t, err)
		_, err = s.remove("sub/.gitignore")
		must(t, err)
		_, err = s.remove("f2d")
		must(t, err)
		must(t, s.writeFile("f2d/inner.txt", []byte("a directory now")))
		_, err = s.remove("d2f")
		must(t, err)
		must(t, s.writeFile("d2f", []byte("a file now")))
	}
}

// TestCommittedViewOfADiskWorkspace: while a call that changes every kind
// of path is in flight, the view a reader outside the calls gets, in the
// call's process or in another on the same state directory, shows the
// workspace as it was before the call (walk, readFile, open, version,
// list, stat), as it does once the call is put back; once a call commits,
// it shows that call's changes.
func TestCommittedViewOfADiskWorkspace(t *testing.T) {
	f := newDiskFixture(t, overlayFiles)
	b := f.openStill()
	other := f.openStill() // another process
	before := dumpStore(t, committedView(t, b), overlayProbes...)
	plain, _ := b.open()
	if got := dumpStore(t, plain, overlayProbes...); got != before {
		t.Fatalf("with no call in flight the view differs from the directory:\n%s\nwant:\n%s", before, got)
	}

	s := inFlight(t, b, overlayCall(t))
	if got := dumpStore(t, plain); got == before {
		t.Fatal("the call changed nothing on disk")
	}
	for _, who := range []struct {
		name string
		b    *diskBackend
	}{{"the call's process", b}, {"another process", other}} {
		if got := dumpStore(t, committedView(t, who.b), overlayProbes...); got != before {
			t.Errorf("%s, while the call runs:\n%s\nwant:\n%s", who.name, got, before)
		}
	}

	must(t, diskUndo{s: s, t: s.c}.restore())
	if got := dumpStore(t, committedView(t, other), overlayProbes...); got != before {
		t.Errorf("after the call was put back:\n%s\nwant:\n%s", got, before)
	}

	s = inFlight(t, b, overlayCall(t))
	diskUndo{s: s, t: s.c}.release()
	after := dumpStore(t, plain, overlayProbes...)
	if got := dumpStore(t, committedView(t, other), overlayProbes...); got != after || got == before {
		t.Errorf("after the call committed:\n%s\nwant:\n%s", got, after)
	}
}

// TestCommittedViewOfADeadCall: a call whose process died in flight
// still shows as it was before, until it is put back; a path of it that
// another call has locked since (and so put back) shows as that call
// leaves it.
func TestCommittedViewOfADeadCall(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a", "b.txt": "old b"})
	b := f.openStill()
	before := dumpStore(t, committedView(t, b))
	die(inFlight(t, b, func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("b.txt", []byte("new b")))
		must(t, s.writeFile("c/c.txt", []byte("new c")))
	}))
	if got := dumpStore(t, committedView(t, b)); got != before {
		t.Errorf("with the dead call left in flight:\n%s\nwant:\n%s", got, before)
	}
	s := inFlight(t, b, func(s *diskStore) { must(t, s.writeFile("a.txt", []byte("newer a"))) })
	diskUndo{s: s, t: s.c}.release()
	want := strings.Replace(before, `"old a"`, `"newer a"`, 1)
	want = strings.Replace(want, `a.txt 5`, `a.txt 7`, 1)
	want = strings.Replace(want, `a.txt dir=false size=5`, `a.txt dir=false size=7`, 1)
	if got := dumpStore(t, committedView(t, b)); got != want {
		t.Errorf("once another call has locked and changed a.txt:\n%s\nwant:\n%s", got, want)
	}
}

// TestCommittedViewReadsAgainAfterAPutBack: a read that a call's put back
// overlapped is made again, as the journal that held what it read may
// have gone; one that put backs keep overlapping fails, saying so.
func TestCommittedViewReadsAgainAfterAPutBack(t *testing.T) {
	f := newDiskFixture(t, nil)
	b := f.openStill()
	c := committedView(t, b).(*committedStore)
	runs := 0
	v, err := settle(c, func() (int, error) {
		runs++
		if runs == 1 {
			b.countRollback()
		}
		return runs, nil
	})
	if err != nil || v != 2 || runs != 2 {
		t.Errorf("settle = %d, %v after %d runs; want the second run's answer", v, err, runs)
	}
	runs = 0
	_, err = settle(c, func() (int, error) {
		runs++
		b.countRollback()
		return runs, nil
	})
	if !errors.Is(err, errPutBack) || runs != maxReadTries {
		t.Errorf("settle overlapped every time: %v after %d runs", err, runs)
	}
	if data, err := os.ReadFile(b.rollbacksName()); err != nil || len(data) != 1+maxReadTries {
		t.Errorf("the count of put backs: %q, %v", data, err)
	}
}

// TestCommittedViewWhileCallsFail: while calls that write, create and
// remove files fail one after another, the reads of another process's
// view (readFile of each file its walk gives) never see a file of them;
// a read that put backs overlapped every time it tried says so.
func TestCommittedViewWhileCallsFail(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "a", "d/b.txt": "b", "d/c.txt": "c"})
	b, other := f.openStill(), f.openStill()
	read := func(st store) (string, error) {
		var out strings.Builder
		err := (&Workspace{st: st, kind: "disk"}).walk("", func(in Info) error {
			data, err := st.readFile(in.Path, 0)
			fmt.Fprintf(&out, "%s %d %q %v\n", in.Path, in.Size, data, err)
			return err
		})
		return out.String(), err
	}
	before, err := read(committedView(t, other))
	must(t, err)
	const calls = 40
	done, stop := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		for i := range calls {
			select {
			case <-stop:
				return
			default:
			}
			st, _ := b.open()
			s := st.(*diskStore)
			if _, err := s.snapshot(); err != nil {
				t.Error(err)
				return
			}
			for j := range 10 {
				if err := s.writeFile(fmt.Sprintf("n%d/%d.txt", i, j), []byte("new")); err != nil {
					t.Error(err)
				}
			}
			if err := s.writeFile("a.txt", []byte(fmt.Sprintf("call %d", i))); err != nil {
				t.Error(err)
			}
			if _, err := s.remove("d"); err != nil {
				t.Error(err)
			}
			if err := (diskUndo{s: s, t: s.c}).restore(); err != nil {
				t.Error(err)
			}
		}
	}()
	reads, overlapped := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		got, err := read(committedView(t, other))
		switch {
		case errors.Is(err, errPutBack):
			overlapped++
		case err != nil:
			t.Fatal(err)
		case got != before:
			t.Fatalf("while calls fail, read %d:\n%s\nwant:\n%s", reads, got, before)
		}
		reads++
	}
	t.Logf("%d reads while %d calls failed, %d of them overlapped by put backs every time", reads, calls, overlapped)
}

// TestCommittedViewIsReadOnly: every change through the view is refused.
func TestCommittedViewIsReadOnly(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "a"})
	c := committedView(t, f.openStill())
	if err := c.writeFile("a.txt", []byte("b")); err == nil {
		t.Error("writeFile through the view succeeded")
	}
	if _, err := c.remove("a.txt"); err == nil {
		t.Error("remove through the view succeeded")
	}
	if got := f.tree(); got != "a.txt -rw-r--r-- a" {
		t.Errorf("the workspace: %s", got)
	}
}

// BenchmarkCommittedRead compares the reads of a disk workspace of 2,000
// files through the directory itself (plain), and through the view of a
// reader outside the calls with no call in flight (idle) and while a call
// that has written 500 files and changed 100 is in flight (inflight):
// the tree as wink://workspace/tree walks it, and one file changed by the
// call.
func BenchmarkCommittedRead(b *testing.B) {
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("src/p%02d/f%04d.go", i%20, i)] = strings.Repeat("x", 1000)
	}
	t := &testing.T{}
	f := &diskFixture{t: t, dir: b.TempDir(), state: b.TempDir()}
	for p, c := range files {
		f.put(p, c)
	}
	bk, err := openDisk(f.dir, f.state, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	db := bk.impl.(*diskBackend)
	plain, _ := db.open()
	st, _ := db.open()
	view := (&Workspace{st: st, kind: "disk"}).Freeze().(*Workspace).st
	tree := func(b *testing.B, st store) {
		n := 0
		if err := (&Workspace{st: st, kind: "disk"}).walk("", func(Info) error { n++; return nil }); err != nil || n < 2000 {
			b.Fatal(n, err)
		}
	}
	file := func(b *testing.B, st store) {
		if _, err := st.readFile("src/p00/f0000.go", 0); err != nil {
			b.Fatal(err)
		}
	}
	run := func(name string) {
		for _, r := range []struct {
			name string
			fn   func(*testing.B, store)
		}{{"tree", tree}, {"file", file}} {
			b.Run(r.name+"/plain/"+name, func(b *testing.B) {
				for b.Loop() {
					r.fn(b, plain)
				}
			})
			b.Run(r.name+"/view/"+name, func(b *testing.B) {
				for b.Loop() {
					r.fn(b, view)
				}
			})
		}
	}
	run("idle")
	cs, _ := db.open()
	s := cs.(*diskStore)
	if _, err := s.snapshot(); err != nil {
		b.Fatal(err)
	}
	for i := range 500 {
		if err := s.writeFile(fmt.Sprintf("new/n%04d.go", i), []byte("new")); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		if err := s.writeFile(fmt.Sprintf("src/p%02d/f%04d.go", i%20, i), []byte("changed")); err != nil {
			b.Fatal(err)
		}
	}
	run("inflight")
	if err := (diskUndo{s: s, t: s.c}).restore(); err != nil {
		b.Fatal(err)
	}
}

// TestCommittedViewOfOthersFilesInANewDirectory: a call in flight made a
// directory and a file in it; another call put a file there too and
// committed. The view reads and walks the committed file, not the other,
// before and after the first call is put back (which leaves the
// directory, not empty).
func TestCommittedViewOfOthersFilesInANewDirectory(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "a"})
	b := f.openStill()
	s := inFlight(t, b, func(s *diskStore) { must(t, s.writeFile("n/mine.txt", []byte("uncommitted"))) })
	other := inFlight(t, b, func(s *diskStore) { must(t, s.writeFile("n/theirs.txt", []byte("committed"))) })
	diskUndo{s: other, t: other.c}.release()
	const want = "a.txt 1 \"a\"\nn/theirs.txt 9 \"committed\"\n"
	walked := func() string {
		t.Helper()
		view := committedView(t, b)
		var out strings.Builder
		must(t, (&Workspace{st: view, kind: "disk"}).walk("", func(in Info) error {
			data, err := view.readFile(in.Path, 0)
			fmt.Fprintf(&out, "%s %d %q\n", in.Path, in.Size, data)
			return err
		}))
		if _, err := view.readFile("n/mine.txt", 0); !errors.Is(err, errNotExist) {
			t.Errorf("readFile of the uncommitted file: %v", err)
		}
		return out.String()
	}
	if got := walked(); got != want {
		t.Errorf("while the call that made n/ runs:\n%s\nwant:\n%s", got, want)
	}
	if err := (diskUndo{s: s, t: s.c}).restore(); err == nil {
		t.Error("the restore removed a directory that holds another call's file")
	}
	if got := walked(); got != want {
		t.Errorf("once the call that made n/ is put back:\n%s\nwant:\n%s", got, want)
	}
}
