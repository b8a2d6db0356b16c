package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Backend keeps the files of the workspace. Build one with NewMemory or
// OpenDisk; each session gets its own view of it.
type Backend struct {
	impl backend
	// includeIgnored turns the ignore rules off (see Config).
	includeIgnored bool
}

type backend interface {
	open() (store, error)
	kind() string
	Close() error
}

// Kind returns "memory" or "disk".
func (b *Backend) Kind() string { return b.impl.kind() }

// Close releases the backend (the disk backend's directory handle).
func (b *Backend) Close() error { return b.impl.Close() }

// NewMemory returns a memory backend whose sessions each start from a copy
// of files (path to content; nil for an empty workspace). Paths are
// normalised; a bad path is an error.
func NewMemory(files map[string][]byte) (*Backend, error) {
	root := emptyDir
	for p, data := range files {
		n, err := normalizeFile(p)
		if err != nil {
			return nil, fmt.Errorf("workspace: %q: %w", p, err)
		}
		if root, err = buildFile(root, n, data); err != nil {
			return nil, fmt.Errorf("workspace: %s: %w", n, err)
		}
	}
	return &Backend{impl: &memBackend{base: root}}, nil
}

// OpenDisk returns a disk backend over the directory dir, which must exist.
// Every session shares the directory. The locks and undo journals of the
// calls in flight are kept under stateDir, in journal/ and a directory
// named by a hash of dir's real path, so that every process working on
// dir with the same state directory shares them. Before it returns, it
// puts back every call that a dead process left in flight there (see the
// package documentation), and does again every second while it is open,
// so that the calls of a process on the same workspace that dies are put
// back without waiting for a restart; logger reports what it did.
func OpenDisk(dir, stateDir string, logger *slog.Logger) (*Backend, error) {
	return openDisk(dir, stateDir, logger, repairEvery)
}

// openDisk is OpenDisk, which puts back the calls that dead processes
// left in flight every interval while it is open (never if 0).
func openDisk(dir, stateDir string, logger *slog.Logger, interval time.Duration) (*Backend, error) {
	if logger == nil {
		logger = slog.Default()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if stateDir == "" {
		return nil, errors.New("workspace: the disk backend needs a state directory")
	}
	sum := sha256.Sum256([]byte(real))
	state, err := filepath.Abs(filepath.Join(stateDir, "journal", hex.EncodeToString(sum[:16])))
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	format, err := journalFormat(filepath.Dir(state))
	if err != nil {
		return nil, fmt.Errorf("workspace: state directory %s: %w", stateDir, err)
	}
	if err := checkStateDir(state); err != nil {
		return nil, fmt.Errorf("workspace: state directory %s: %w", stateDir, err)
	}
	if format == 0 {
		if err := markJournalFormat(filepath.Dir(state)); err != nil {
			return nil, fmt.Errorf("workspace: state directory %s: %w", stateDir, err)
		}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	b := &diskBackend{dir: abs, real: real, root: root, state: state, logger: logger, stop: make(chan struct{}), repaired: make(chan struct{})}
	b.writeRoot()
	n, err := b.recoverAll()
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("workspace: putting back the calls left in flight in %s: %w", state, err)
	}
	if n > 0 {
		logger.Warn("workspace: put back calls a dead process left in flight", "calls", n, "root", abs, "state", state)
	}
	b.recovered = n
	if interval > 0 {
		go b.repair(interval)
	} else {
		close(b.repaired)
	}
	return &Backend{impl: b}, nil
}

// checkStateDir makes dir if it is missing and checks that files can be
// made in it. It makes its probe as the locks and journals are made
// (createInStateDir), which make dir again when another process, closing,
// removed it empty meanwhile.
func checkStateDir(dir string) error {
	f, err := createInStateDir(filepath.Join(dir, "probe-"+rand.Text()), os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// Open builds the backend cfg describes and copies its mounts in: into the
// base tree of a memory backend, or into the directory of a disk backend
// where a file of that path does not exist yet (the workspace's copy
// wins, so a restart never overwrites the agent's work).
func Open(cfg Config, logger *slog.Logger) (*Backend, error) {
	if logger == nil {
		logger = slog.Default()
	}
	files, err := loadMounts(cfg, logger)
	if err != nil {
		return nil, err
	}
	switch cfg.Backend {
	case "", "memory":
		root := emptyDir
		for _, f := range files {
			if _, ok := lookup(root, f.path); ok {
				logger.Warn("workspace mount: path already provided by an earlier mount; keeping the first", "path", f.path, "host", f.host)
				continue
			}
			if root, err = buildFile(root, f.path, f.data); err != nil {
				return nil, fmt.Errorf("workspace mount %s: %s: %w", f.host, f.path, err)
			}
		}
		return &Backend{impl: &memBackend{base: root}, includeIgnored: cfg.IncludeIgnored}, nil
	case "disk":
		if cfg.Root == "" {
			return nil, errors.New("workspace: the disk backend needs a root directory")
		}
		b, err := OpenDisk(cfg.Root, cfg.StateDir, logger)
		if err != nil {
			return nil, err
		}
		kept, err := mountOnDisk(b.impl.(*diskBackend), files)
		if err != nil {
			b.Close()
			return nil, err
		}
		if kept > 0 {
			logger.Info("workspace mounts: files already in the workspace were kept", "files", kept)
		}
		b.includeIgnored = cfg.IncludeIgnored
		return b, nil
	}
	return nil, fmt.Errorf("workspace: unknown backend %q (want memory or disk)", cfg.Backend)
}

// mountOnDisk copies files into a disk backend where no file of that path
// exists yet, holding each file's lock from that check to the write; it
// returns how many it kept. The copies are one journaled change, but each
// file's lock is let go once it is written: if the process dies, the files
// written stay (the next start copies the rest), and only the one being
// written is put back.
func mountOnDisk(b *diskBackend, files []mountedFile) (kept int, err error) {
	st := &diskStore{b: b, root: b.root}
	err = st.withTxn(func(t *txn) error {
		for _, f := range files {
			if err := st.take(context.Background(), t, f.path); err != nil {
				return fmt.Errorf("workspace mount %s: %s: %w", f.host, f.path, err)
			}
			if _, err := st.stat(f.path); !errors.Is(err, errNotExist) {
				kept++
			} else if err := st.write(t, f.path, f.data); err != nil {
				return fmt.Errorf("workspace mount %s: %s: %w", f.host, f.path, err)
			}
			if err := t.unlock(f.path); err != nil {
				return err
			}
		}
		return nil
	})
	return kept, err
}
