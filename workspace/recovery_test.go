package workspace

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// diskFixture is a disk workspace directory and its state directory,
// which backends can be opened on and reopened, as processes would.
type diskFixture struct {
	t     *testing.T
	dir   string
	state string
}

func newDiskFixture(t *testing.T, files map[string]string) *diskFixture {
	t.Helper()
	f := &diskFixture{t: t, dir: t.TempDir(), state: t.TempDir()}
	for p, c := range files {
		f.put(p, c)
	}
	return f
}

func (f *diskFixture) put(p, content string) {
	f.t.Helper()
	full := filepath.Join(f.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// open opens a backend on the fixture: a process starting.
func (f *diskFixture) open() *diskBackend {
	f.t.Helper()
	b, err := OpenDisk(f.dir, f.state, slog.New(slog.DiscardHandler))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { b.Close() })
	return b.impl.(*diskBackend)
}

// tree lists every file, directory and link of the workspace, as the os
// package sees it, with contents.
func (f *diskFixture) tree() string {
	f.t.Helper()
	h := &harness{t: f.t, dir: f.dir}
	return h.dump(nil)
}

// leftovers lists the files in the state directory (journals, locks; not
// the root files of the workspaces, nor the format file of journal/, nor
// the counts of calls put back beside the workspaces' directories).
func (f *diskFixture) leftovers() []string {
	var out []string
	_ = filepath.WalkDir(f.state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != rootFile && p != filepath.Join(f.state, "journal", journalFormatFile) && !strings.HasSuffix(p, rollbacksSuffix) {
			out = append(out, filepath.Base(p))
		}
		return nil
	})
	return out
}

// die drops what the call in flight on s holds the way a killed process
// does: its journal and lock files stay as they are, the flocks go.
func die(s *diskStore) {
	t := s.c
	if t.journal != nil {
		t.journal.Close()
	}
	for _, l := range t.locks {
		l.f.Close()
		l.unlock()
	}
	s.c = nil
}

// inFlight starts a call on a new session of b and makes the changes of
// fn in it.
func inFlight(t *testing.T, b *diskBackend, fn func(s *diskStore)) *diskStore {
	t.Helper()
	st, _ := b.open()
	s := st.(*diskStore)
	if _, err := s.snapshot(); err != nil {
		t.Fatal(err)
	}
	fn(s)
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestartPutsBackCallsInFlight: a process dies in the middle of a call
// that overwrote a file, created one in a new directory, removed a file
// and a directory, left a temporary file and a torn last journal record.
// Opening the workspace again puts all of it back, keeps what a call that
// committed wrote, removes the temporary file and leaves nothing in the
// state directory.
func TestRestartPutsBackCallsInFlight(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a", "c.txt": "old c", "d/x": "old x"})
	before := f.tree()
	b := f.open()
	s := inFlight(t, b, func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("n/m/b.txt", []byte("new b")))
		_, err := s.remove("c.txt")
		must(t, err)
		_, err = s.remove("d")
		must(t, err)
		// A write cut short by the crash: its temporary file, and half of
		// its journal record.
		f.put(tmpPrefix+s.c.id+"-0123", "half of a")
		rec := appendRecord(nil, recIntent, "a.txt", state{kind: kindFile, hash: hashVersion([]byte("newer a"))})
		_, err = s.c.journal.Write(rec[:len(rec)-3])
		must(t, err)
	})
	committed := inFlight(t, b, func(s *diskStore) { must(t, s.writeFile("e.txt", []byte("e"))) })
	must(t, committed.end(committed.c))
	die(s)
	if f.tree() == before {
		t.Fatal("the call changed nothing before it died")
	}

	f.open()
	want := before + "\ne.txt -rw-r--r-- e"
	if got := f.tree(); got != want {
		t.Errorf("after the restart:\n%s\nwant:\n%s", got, want)
	}
	if left := f.leftovers(); len(left) > 0 {
		t.Errorf("left in the state directory: %v", left)
	}
}

// TestLockOfADeadHoldersFilePutsItBack: while the workspace stays open, a
// session that takes the lock of a file a dead call held first puts that
// file back from the dead call's journal; the rest of the dead call is put
// back as each of its files is locked, and its journal goes at the next
// start.
func TestLockOfADeadHoldersFilePutsItBack(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a", "b.txt": "old b"})
	before := f.tree()
	b := f.open()
	die(inFlight(t, b, func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("b.txt", []byte("new b")))
	}))
	st, _ := b.open()
	s := st.(*diskStore)
	ctx := context.Background()
	_, err := s.lock(ctx, "next", []string{"a.txt"})
	must(t, err)
	if got := f.tree(); got != "a.txt -rw-r--r-- old a\nb.txt -rw-r--r-- new b" {
		t.Errorf("after locking a.txt:\n%s", got)
	}
	_, err = s.lock(ctx, "next", []string{"b.txt"})
	must(t, err)
	must(t, s.end(s.c))
	if got := f.tree(); got != before {
		t.Errorf("after locking b.txt:\n%s\nwant:\n%s", got, before)
	}
	f.open()
	if got, left := f.tree(), f.leftovers(); got != before || len(left) > 0 {
		t.Errorf("after the restart:\n%s\nleft in the state directory: %v", got, left)
	}
}

// TestRecoveryLeavesOthersChangesAlone: a file that a program which takes
// no lock changed after the dead call is left as that program left it.
func TestRecoveryLeavesOthersChangesAlone(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a", "b.txt": "old b"})
	die(inFlight(t, f.open(), func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("b.txt", []byte("new b")))
	}))
	f.put("a.txt", "an editor's a")
	f.open()
	if got := f.tree(); got != "a.txt -rw-r--r-- an editor's a\nb.txt -rw-r--r-- old b" {
		t.Errorf("after the restart:\n%s", got)
	}
}

// TestRecoveryLeavesLiveCallsAlone: a second process opening the workspace
// leaves the call another live process has in flight alone, and that call
// still restores whole.
func TestRecoveryLeavesLiveCallsAlone(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a"})
	before := f.tree()
	s := inFlight(t, f.open(), func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("n/b.txt", []byte("new b")))
	})
	during := f.tree()
	f.open()
	if got := f.tree(); got != during {
		t.Errorf("a second process's start changed a live call's files:\n%s\nwant:\n%s", got, during)
	}
	u := diskUndo{s: s, t: s.c}
	must(t, u.restore())
	if got, left := f.tree(), f.leftovers(); got != before || len(left) > 0 {
		t.Errorf("after the restore:\n%s\nwant:\n%s\nleft in the state directory: %v", got, before, left)
	}
}

// TestStateDirectoryErrors: a state directory that cannot be made or
// written is a startup error that names it.
func TestStateDirectoryErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o644))
	_, err := OpenDisk(t.TempDir(), file, nil)
	if err == nil || !strings.Contains(err.Error(), "state directory "+file) {
		t.Errorf("a file as the state directory: %v", err)
	}
	if _, err := OpenDisk(t.TempDir(), "", nil); err == nil {
		t.Error("no state directory was accepted")
	}
}

// TestRestoreLeavesDirectoriesOthersMade: a directory that another call
// made between this call's journal record and its own mkdir is not this
// call's to remove.
func TestRestoreLeavesDirectoriesOthersMade(t *testing.T) {
	f := newDiskFixture(t, nil)
	s := inFlight(t, f.open(), func(s *diskStore) {
		must(t, s.change(s.c, "d", state{kind: kindDir}))
		must(t, os.Mkdir(filepath.Join(f.dir, "d"), 0o755)) // the other call
		must(t, s.untouched(s.c, "d"))
	})
	must(t, diskUndo{s: s, t: s.c}.restore())
	if got := f.tree(); got != "d/ -rwxr-xr-x" {
		t.Errorf("after the restore:\n%s", got)
	}
}

// TestKilledMountKeepsTheFilesWritten: mounts let go of each file once it
// is written, so a process that dies while copying them leaves the files
// already copied (the next start copies the rest), and only the one being
// written is put back.
func TestKilledMountKeepsTheFilesWritten(t *testing.T) {
	f := newDiskFixture(t, nil)
	st, _ := f.open().open()
	s := st.(*diskStore)
	s.c = newTxn("")
	ctx := context.Background()
	for _, p := range []string{"m/a.txt", "m/b.txt"} {
		must(t, s.take(ctx, s.c, p))
		must(t, s.write(s.c, p, []byte(p)))
		if p == "m/a.txt" {
			must(t, s.c.unlock(p))
		}
	}
	die(s)
	f.open()
	if got, left := f.tree(), f.leftovers(); got != "m/ -rwxr-xr-x\nm/a.txt -rw-r--r-- m/a.txt" || len(left) > 0 {
		t.Errorf("after the restart:\n%s\nleft in the state directory: %v", got, left)
	}
}

// TestSiblingPutsBackCallsInFlight: while one process has the workspace
// open, another process on it dies in the middle of a call; the first puts
// the call back within a few seconds, without a restart.
func TestSiblingPutsBackCallsInFlight(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a"})
	before := f.tree()
	f.open() // the process that lives on
	dead := f.open()
	s := inFlight(t, dead, func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
		must(t, s.writeFile("n/b.txt", []byte("new b")))
	})
	die(s)
	// The files are put back first, then the dead call's locks go.
	for end := time.Now().Add(10 * time.Second); f.tree() != before || len(f.leftovers()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("10s after the process died:\n%s\nwant:\n%s\nleft in the state directory: %v", f.tree(), before, f.leftovers())
		}
	}
}

// TestSiblingPutsBackAfterTheStateDirectoryWent: a process has the
// workspace open, with nothing in flight, so that its repair waits for a
// call to begin (it does not look on a clock); another process closing
// the workspace removes its directory in the state directory, empty; a
// third process then dies in the middle of a call. The one that lived on,
// which watched the directory that went, puts the call back within a few
// seconds all the same.
func TestSiblingPutsBackAfterTheStateDirectoryWent(t *testing.T) {
	idle := make(chan *diskBackend, 16)
	repairIdle = func(b *diskBackend) { idle <- b }
	t.Cleanup(func() { repairIdle = nil })
	waitIdle := func(b *diskBackend) {
		t.Helper()
		for end := time.After(10 * time.Second); ; {
			select {
			case got := <-idle:
				if got == b {
					return
				}
			case <-end:
				t.Fatal("10s on, the repair still looks on a clock")
			}
		}
	}
	f := newDiskFixture(t, map[string]string{"a.txt": "old a"})
	before := f.tree()
	lives := f.open()
	waitIdle(lives)
	b, err := OpenDisk(f.dir, f.state, slog.New(slog.DiscardHandler))
	must(t, err)
	must(t, b.Close()) // removes the directory: only its root file is there
	waitIdle(lives)    // the root file went: it looked, and waits again
	if _, err := os.Stat(filepath.Join(lives.state, rootFile)); err != nil {
		t.Errorf("the root file is not there again: %v", err)
	}
	dead := f.open()
	s := inFlight(t, dead, func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
	})
	die(s)
	for end := time.Now().Add(10 * time.Second); f.tree() != before || len(f.leftovers()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("10s after the process died:\n%s\nwant:\n%s\nleft in the state directory: %v", f.tree(), before, f.leftovers())
		}
	}
}

// TestRecover: Recover puts back what a dead process left in flight in
// each workspace of a state directory, which it finds by their root files,
// and reports a workspace whose root file is gone.
func TestRecover(t *testing.T) {
	f := newDiskFixture(t, map[string]string{"a.txt": "old a"})
	before := f.tree()
	b, err := openDisk(f.dir, f.state, slog.New(slog.DiscardHandler), 0)
	must(t, err)
	s := inFlight(t, b.impl.(*diskBackend), func(s *diskStore) {
		must(t, s.writeFile("a.txt", []byte("new a")))
	})
	die(s)
	must(t, b.Close())
	lost := filepath.Join(f.state, "journal", "zz") // listed after any hash
	must(t, os.MkdirAll(lost, 0o700))

	got, err := Recover(f.state, nil)
	must(t, err)
	real, err := filepath.EvalSymlinks(f.dir)
	must(t, err)
	if len(got) != 2 || got[0].Root != real || got[0].Calls != 1 || got[0].Err != nil || got[1].Root != lost || got[1].Err == nil {
		t.Fatalf("Recover: %+v, want %s unknown and one call put back in %s", got, lost, real)
	}
	if tree := f.tree(); tree != before {
		t.Errorf("after Recover:\n%s\nwant:\n%s", tree, before)
	}
	entries, _ := os.ReadDir(filepath.Join(f.state, "journal"))
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return !e.IsDir() }) // and the format file
	if len(entries) != 1 {
		t.Errorf("the state directory keeps %d workspaces' directories, want the unknown one only", len(entries))
	}
}
