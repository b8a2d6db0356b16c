package workspace

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultMaxBytes is the byte budget of the mounts when Config.MaxBytes is
// zero.
const DefaultMaxBytes = 64 << 20

// Config says which backend to build and what to copy into it.
type Config struct {
	// Backend is "memory" (the default when empty) or "disk".
	Backend string
	// Root is the directory of a disk workspace.
	Root string
	// StateDir is where a disk workspace keeps the locks and undo journals
	// of the calls in flight (see OpenDisk); required with Root.
	StateDir string
	// Mounts are host directories copied in at startup, in order; when two
	// provide the same path, the first wins.
	Mounts []Mount
	// AllowedRoots, when not empty, are the only host directories mounts
	// may read from: each mount's directory, symbolic links resolved, must
	// lie under one of them, and a followed link may not lead out of it.
	AllowedRoots []string
	// MaxBytes is the most bytes the mounts may bring in together;
	// DefaultMaxBytes when zero. Going over it is a startup error.
	MaxBytes int64
	// IncludeIgnored turns off the ignore rules that mounts, glob, grep,
	// ls and the workspace resource otherwise follow: leave out any
	// directory or file named .git and what the .gitignore files on the
	// way ignore (those of a mount's directory and below it; of the
	// workspace root down, for the tools).
	IncludeIgnored bool
}

// Mount is a host directory copied into the workspace at startup.
type Mount struct {
	// Host is the directory on the host.
	Host string
	// Path is where its contents appear in the workspace; "" is the root.
	Path string
	// Include lists glob patterns of the files to copy; all when empty.
	// Exclude lists patterns of files and directories to leave out. A
	// pattern without "/" matches a name anywhere ("*.go", "node_modules");
	// one with "/" matches the path from the mount's directory, "**"
	// spanning directories ("cmd/**/*.go").
	Include, Exclude []string
	// FollowSymlinks copies what symbolic links point to, as long as it
	// stays under the mount's allowed root (or the mount's own directory
	// when no allowed roots are configured). Otherwise links are skipped.
	FollowSymlinks bool
}

// mountedFile is one file a mount brings in.
type mountedFile struct {
	host string // the mount's host directory, for messages
	path string // normalised workspace path
	data []byte
}

// loadMounts reads every mount of cfg from the host, within the byte budget.
func loadMounts(cfg Config, logger *slog.Logger) ([]mountedFile, error) {
	budget := cfg.MaxBytes
	if budget <= 0 {
		budget = DefaultMaxBytes
	}
	var allowed []string
	for _, r := range cfg.AllowedRoots {
		real, err := realDir(r)
		if err != nil {
			return nil, fmt.Errorf("workspace allowed root %s: %w", r, err)
		}
		allowed = append(allowed, real)
	}
	var files []mountedFile
	var total int64
	for i, m := range cfg.Mounts {
		l, err := newMountLoader(m, allowed, logger)
		if err != nil {
			return nil, fmt.Errorf("workspace mount %d (%s): %w", i+1, m.Host, err)
		}
		l.total, l.budget, l.includeIgnored = total, budget, cfg.IncludeIgnored
		err = l.load()
		l.root.Close()
		if err != nil {
			return nil, fmt.Errorf("workspace mount %d (%s): %w", i+1, m.Host, err)
		}
		total = l.total
		files = append(files, l.files...)
		logger.Info("workspace mount loaded", "host", l.host, "path", display(l.dest), "files", len(l.files), "skipped", l.skipped)
	}
	return files, nil
}

// realDir returns the absolute path of dir with symbolic links resolved,
// and checks it is a directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

type mountLoader struct {
	m      Mount
	host   string   // the mount's directory, resolved
	root   *os.Root // its allowed root, or the directory itself
	start  string   // the mount's directory relative to root
	dest   string   // normalised workspace path of the mount
	logger *slog.Logger

	files          []mountedFile
	skipped        int
	total, budget  int64
	includeIgnored bool
}

func newMountLoader(m Mount, allowed []string, logger *slog.Logger) (*mountLoader, error) {
	host, err := realDir(m.Host)
	if err != nil {
		return nil, err
	}
	dest, err := Normalize(m.Path)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", m.Path, err)
	}
	for _, pats := range [][]string{m.Include, m.Exclude} {
		for _, p := range pats {
			if !doublestar.ValidatePattern(p) {
				return nil, fmt.Errorf("invalid glob pattern %q", p)
			}
		}
	}
	confine := host
	if len(allowed) > 0 {
		confine = ""
		for _, a := range allowed {
			if rel, err := filepath.Rel(a, host); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				confine = a
				break
			}
		}
		if confine == "" {
			return nil, fmt.Errorf("%s is not under an allowed root (%s)", host, strings.Join(allowed, ", "))
		}
	}
	root, err := os.OpenRoot(confine)
	if err != nil {
		return nil, err
	}
	start, _ := filepath.Rel(confine, host)
	return &mountLoader{m: m, host: host, root: root, start: start, dest: dest, logger: logger}, nil
}

func (l *mountLoader) load() error {
	fi, err := l.root.Stat(l.start)
	if err != nil {
		return err
	}
	return l.dir(l.start, "", []fs.FileInfo{fi}, ignoreRules{})
}

// matches reports whether a pattern of pats matches the entry at rel (the
// slash path from the mount's directory).
func matches(pats []string, rel string) bool {
	for _, p := range pats {
		subject := rel
		if !strings.Contains(p, "/") {
			subject = base(rel)
		}
		if ok, _ := doublestar.Match(p, subject); ok {
			return true
		}
	}
	return false
}

// dir copies the directory at name (relative to the root; rel from the
// mount's directory). seen holds the directories above it, so that a
// followed link cannot loop; rules are the ignore rules of its parent.
func (l *mountLoader) dir(name, rel string, seen []fs.FileInfo, rules ignoreRules) error {
	f, _, err := openChecked(l.root, name, true)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	sortEntries(entries)
	if !l.includeIgnored {
		rules = l.ignoreRules(name, rel, entries, rules)
	}
	for _, e := range entries {
		childRel := join(rel, e.Name())
		childName := filepath.Join(name, e.Name())
		if !addressable(e.Name()) {
			l.skip("name the workspace cannot hold", childRel)
			continue
		}
		if matches(l.m.Exclude, childRel) {
			continue
		}
		dest := join(l.dest, childRel)
		if strings.Count(dest, "/")+1 > MaxSegments {
			l.skip(fmt.Sprintf("deeper than %d segments", MaxSegments), childRel)
			continue
		}
		fi, err := e.Info()
		if err != nil {
			l.skip(err.Error(), childRel)
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if !l.m.FollowSymlinks {
				l.skip("symbolic link (not followed)", childRel)
				continue
			}
			if fi, err = l.root.Stat(childName); err != nil {
				l.skip("symbolic link leads outside the allowed root or nowhere", childRel)
				continue
			}
		}
		if !l.includeIgnored && rules.skips(childRel, fi.IsDir()) {
			continue
		}
		switch {
		case fi.IsDir():
			loop := false
			for _, s := range seen {
				loop = loop || os.SameFile(s, fi)
			}
			if loop {
				l.skip("symbolic link loop", childRel)
				continue
			}
			if err := l.dir(childName, childRel, append(seen, fi), rules); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if len(l.m.Include) > 0 && !matches(l.m.Include, childRel) {
				continue
			}
			if err := l.file(childName, dest, fi.Size()); err != nil {
				return err
			}
		default:
			l.skip("not a regular file", childRel)
		}
	}
	return nil
}

func (l *mountLoader) file(name, dest string, size int64) error {
	if l.total+size > l.budget {
		return fmt.Errorf("mounts bring in more than the byte budget of %d bytes at %s; narrow them with include/exclude or raise workspace.max_bytes", l.budget, dest)
	}
	f, _, err := openChecked(l.root, name, false)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, l.budget-l.total+1))
	if err != nil {
		return err
	}
	if l.total+int64(len(data)) > l.budget {
		return fmt.Errorf("mounts bring in more than the byte budget of %d bytes at %s; narrow them with include/exclude or raise workspace.max_bytes", l.budget, dest)
	}
	l.total += int64(len(data))
	l.files = append(l.files, mountedFile{host: l.host, path: dest, data: data})
	return nil
}

func (l *mountLoader) skip(why, rel string) {
	l.skipped++
	l.logger.Debug("workspace mount: skipped", "host", l.host, "path", rel, "why", why)
}

// ignoreRules returns the ignore rules inside the directory at name (rel
// from the mount's directory), given rules, those of its parent, and
// entries, its children: with the patterns of its .gitignore file added
// when it has a regular one.
func (l *mountLoader) ignoreRules(name, rel string, entries []fs.DirEntry, rules ignoreRules) ignoreRules {
	for _, e := range entries {
		if e.Name() != ignoreFile || !e.Type().IsRegular() {
			continue
		}
		f, _, err := openChecked(l.root, filepath.Join(name, ignoreFile), false)
		if err != nil {
			l.skip(err.Error(), join(rel, ignoreFile))
			return rules
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
		if err != nil {
			l.skip(err.Error(), join(rel, ignoreFile))
			return rules
		}
		return rules.with(rel, data)
	}
	return rules
}
