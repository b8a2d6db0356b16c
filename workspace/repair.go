package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// repairEvery is how often an open disk workspace looks in its state
// directory for calls that a dead process (another process on the same
// workspace, killed or crashed) left in flight, and puts them back, while
// there are calls in flight there: a listing of the directory and a try
// of each journal's lock, nothing more while every process lives. While
// the directory holds no journal and no lock it does not look: it waits
// for one to be made there.
const repairEvery = time.Second

// rootFile is the file of a workspace's directory in the state directory
// that holds the workspace's real path, for Recover.
const rootFile = "root"

// repair puts back, every interval while the state directory holds calls
// in flight, and until stop is closed, the calls that dead processes left
// there (recoverAll); it keeps the root file there for Recover. It learns
// that a call has begun, in any process, from a watch of the directory
// (fsnotify), so that a workspace nobody calls does nothing; where the
// directory cannot be watched, it looks every interval.
func (b *diskBackend) repair(interval time.Duration) {
	defer close(b.repaired)
	// events and errs stay nil, and the clock ticks on, where the
	// directory cannot be watched.
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		err = b.watch(w)
	}
	if err == nil {
		events, errs = w.Events, w.Errors
	} else {
		b.logger.Debug("workspace: the state directory cannot be watched: looking for calls left in flight every interval", "state", b.state, "interval", interval, "err", err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	ticking := true // the first look is at the first tick
	failed := ""    // the last failure, logged once for as long as it lasts
	for {
		select {
		case <-b.stop:
			return
		case ev, ok := <-events:
			switch {
			case !ok:
				events, errs = nil, nil
			case ev.Name == b.state && ev.Has(fsnotify.Remove|fsnotify.Rename):
				// Another process, closing, removed the directory empty:
				// make it again, and watch the new one.
				if err := b.watch(w); err != nil {
					b.logger.Warn("workspace: watching the state directory again failed: looking for calls left in flight every interval", "state", b.state, "err", err)
					events, errs = nil, nil
				}
			case !ev.Has(fsnotify.Create) && filepath.Base(ev.Name) != rootFile:
				continue
			case ev.Has(fsnotify.Create) && !keptInFlight(filepath.Base(ev.Name)):
				continue
			}
			// A call began, the root file went, or the watch did: look
			// at the next tick, and every tick until nothing is left.
			if !ticking {
				ticking = true
				t.Reset(interval)
			}
			continue
		case err, ok := <-errs:
			if !ok {
				events, errs = nil, nil
			} else {
				// Events may have been lost (the queue overflowed): look.
				b.logger.Debug("workspace: watching the state directory", "state", b.state, "err", err)
			}
			ticking = true
			t.Reset(interval)
			continue
		case <-t.C:
		}
		n, err := b.recoverAll()
		switch {
		case err != nil && err.Error() != failed:
			failed = err.Error()
			b.logger.Warn("workspace: putting back the calls a dead process left in flight failed", "root", b.dir, "state", b.state, "err", err)
		case err == nil:
			failed = ""
		}
		if n > 0 {
			b.logger.Warn("workspace: put back calls a dead process left in flight", "calls", n, "root", b.dir, "state", b.state)
		}
		b.ensureRoot()
		if events != nil && err == nil && !b.callsInFlight() {
			ticking = false
			t.Stop()
			if repairIdle != nil {
				repairIdle(b)
			}
		}
	}
}

// repairIdle, when set (by a test), is called each time the repair of b
// stops its clock, to wait for a call to begin.
var repairIdle func(b *diskBackend)

// watch makes the state directory if it is missing, with its root file,
// and has w watch it.
func (b *diskBackend) watch(w *fsnotify.Watcher) error {
	if err := os.MkdirAll(b.state, 0o700); err != nil {
		return err
	}
	b.ensureRoot()
	return w.Add(b.state)
}

// keptInFlight reports whether name, a file of the state directory, is
// one that a call in flight keeps there: a journal or a lock.
func keptInFlight(name string) bool {
	return strings.HasSuffix(name, journalSuffix) || strings.HasSuffix(name, lockSuffix)
}

// callsInFlight reports whether the state directory holds a journal or a
// lock (or cannot be read).
func (b *diskBackend) callsInFlight() bool {
	entries, err := os.ReadDir(b.state)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return keptInFlight(e.Name()) })
}

// ensureRoot writes the root file if it is missing.
func (b *diskBackend) ensureRoot() {
	if _, err := os.Stat(filepath.Join(b.state, rootFile)); errors.Is(err, fs.ErrNotExist) {
		b.writeRoot()
	}
}

// writeRoot writes the workspace's real path in its root file, whole or
// not at all.
func (b *diskBackend) writeRoot() {
	f, err := os.CreateTemp(b.state, ".root-*")
	if err != nil {
		return
	}
	_, err = f.WriteString(b.real + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(b.state, rootFile))
	}
	if err != nil {
		os.Remove(f.Name())
		b.logger.Warn("workspace: writing the root file of the state directory failed", "state", b.state, "err", err)
	}
}

// forget removes the workspace's directory in the state directory when
// nothing but its root file is left there (no call in flight, in any
// process).
func (b *diskBackend) forget() {
	entries, err := os.ReadDir(b.state)
	if err != nil || len(entries) != 1 || entries[0].Name() != rootFile {
		return
	}
	_ = os.Remove(filepath.Join(b.state, rootFile))
	if err := os.Remove(b.state); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.writeRoot() // another process's call began meanwhile
	}
}

// Repaired is what Recover did in one workspace.
type Repaired struct {
	// Root is the workspace's directory.
	Root string
	// Calls is how many calls left in flight were put back.
	Calls int
	// Err is why the workspace could not be repaired, or nil.
	Err error
}

// Recover puts back, in every disk workspace that keeps its locks and
// journals under stateDir, the calls that dead processes left in flight,
// as a process opening the workspace does (OpenDisk), and reports what it
// did in each. The calls of live processes are left alone.
func Recover(stateDir string, logger *slog.Logger) ([]Repaired, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dirs, err := os.ReadDir(filepath.Join(stateDir, "journal"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var out []Repaired
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		state := filepath.Join(stateDir, "journal", d.Name())
		b, err := os.ReadFile(filepath.Join(state, rootFile))
		if err != nil {
			out = append(out, Repaired{Root: state, Err: fmt.Errorf("the workspace of %s is not known: %w", state, err)})
			continue
		}
		root := strings.TrimSpace(string(b))
		backend, err := openDisk(root, stateDir, logger, 0)
		if err != nil {
			out = append(out, Repaired{Root: root, Err: err})
			continue
		}
		impl := backend.impl.(*diskBackend)
		out = append(out, Repaired{Root: root, Calls: impl.recovered})
		backend.Close()
	}
	return out, nil
}
