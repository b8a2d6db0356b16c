package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// Backend keeps the files of the workspace. Build one with NewMemory or
// OpenDisk; each session gets its own view of it.
type Backend struct {
	impl backend
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
	bld := newTreeBuilder()
	for p, data := range files {
		n, err := normalizeFile(p)
		if err != nil {
			return nil, fmt.Errorf("workspace: %q: %w", p, err)
		}
		if err := buildFile(bld, n, data); err != nil {
			return nil, fmt.Errorf("workspace: %s: %w", n, err)
		}
	}
	return &Backend{impl: &memBackend{base: bld.Map()}}, nil
}

// OpenDisk returns a disk backend over the directory dir, which must exist.
// Every session shares the directory.
func OpenDisk(dir string) (*Backend, error) {
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
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Backend{impl: &diskBackend{dir: abs, root: root}}, nil
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
		bld := newTreeBuilder()
		for _, f := range files {
			if _, ok := bld.Get(f.path); ok {
				logger.Warn("workspace mount: path already provided by an earlier mount; keeping the first", "path", f.path, "host", f.host)
				continue
			}
			if err := buildFile(bld, f.path, f.data); err != nil {
				return nil, fmt.Errorf("workspace mount %s: %s: %w", f.host, f.path, err)
			}
		}
		return &Backend{impl: &memBackend{base: bld.Map()}}, nil
	case "disk":
		if cfg.Root == "" {
			return nil, errors.New("workspace: the disk backend needs a root directory")
		}
		b, err := OpenDisk(cfg.Root)
		if err != nil {
			return nil, err
		}
		st := &diskStore{root: b.impl.(*diskBackend).root}
		kept := 0
		for _, f := range files {
			if _, err := st.stat(f.path); !errors.Is(err, errNotExist) {
				kept++
				continue
			}
			if err := st.writeFile(f.path, f.data); err != nil {
				b.Close()
				return nil, fmt.Errorf("workspace mount %s: %s: %w", f.host, f.path, err)
			}
		}
		if kept > 0 {
			logger.Info("workspace mounts: files already in the workspace were kept", "files", kept)
		}
		return b, nil
	}
	return nil, fmt.Errorf("workspace: unknown backend %q (want memory or disk)", cfg.Backend)
}

// buildFile adds a file and its missing parent directories to a tree
// being built.
func buildFile(bld interface {
	Get(string) (*node, bool)
	Set(string, *node)
}, p string, data []byte) error {
	for _, a := range ancestors(p) {
		n, ok := bld.Get(a)
		switch {
		case !ok:
			bld.Set(a, dirNode)
		case !n.dir:
			return &parentError{path: a}
		}
	}
	if n, ok := bld.Get(p); ok && n.dir {
		return errIsDir
	}
	bld.Set(p, fileNode(data))
	return nil
}
