package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// repairEvery is how often an open disk workspace looks in its state
// directory for calls that a dead process (another process on the same
// workspace, killed or crashed) left in flight, and puts them back: a
// listing of the directory and a try of each journal's lock, nothing more
// while every process lives.
const repairEvery = time.Second

// rootFile is the file of a workspace's directory in the state directory
// that holds the workspace's real path, for Recover.
const rootFile = "root"

// repair puts back, every interval until stop is closed, the calls that
// dead processes left in flight (recoverAll), and keeps the root file
// there for Recover.
func (b *diskBackend) repair(interval time.Duration) {
	defer close(b.repaired)
	t := time.NewTicker(interval)
	defer t.Stop()
	failed := "" // the last failure, logged once for as long as it lasts
	for {
		select {
		case <-b.stop:
			return
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
		if _, err := os.Stat(filepath.Join(b.state, rootFile)); errors.Is(err, fs.ErrNotExist) {
			b.writeRoot()
		}
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
