package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Files is what ReadBeforeWrite needs to know about a workspace.
type Files interface {
	// Normalize returns the workspace's canonical form of path (so that
	// "a//b" and "/a/b" are the same file), or an error for a bad path.
	Normalize(path string) (string, error)
	// Version returns a token that changes whenever the file's content
	// changes, by anyone, and whether the file exists.
	Version(path string) (version string, exists bool, err error)
}

// Observer is implemented by Files that know which version of a file the
// current call itself read or wrote. Remember records that version instead
// of the current one, so that a change someone else makes between the
// tool's read and the end of the call does not count as seen.
type Observer interface {
	// Observed returns the version of the file at path (normalised) as the
	// current call last read or wrote it, whether it existed then, and
	// whether the call saw it at all.
	Observed(path string) (version string, exists, ok bool)
}

// Locker is implemented by Files that other sessions or processes change
// at the same time (a disk workspace). Check locks the paths a write names
// before it compares versions, so that the check and the write happen
// under one lock and nobody changes the file in between.
type Locker interface {
	// Lock takes, for the call whose id is call, the locks of the files at
	// paths (raw, as the params name them), waiting no longer than ctx. The
	// Files holds them until the call's transaction ends; unlock releases
	// them sooner for a call that never reaches its transaction.
	Lock(ctx context.Context, call string, paths []string) (unlock func(), err error)
}

// PathsFunc returns the file paths a call's decoded params name.
type PathsFunc func(params any) []string

// Move is a file or directory a call moves, from one path to another.
type Move struct{ From, To string }

// MovesFunc returns the moves a call's decoded params make.
type MovesFunc func(params any) []Move

// known is the STATE slice mapping a normalised path to the version of the
// file the session last read or wrote.
var known = session.NewKey[merkle.Map[string]]("policy.read_before_write")

// ReadBeforeWrite lets a write tool change an existing file only if the
// session knows the file's current content: it read it, or wrote it itself,
// and nobody changed it since. New files may always be created.
type ReadBeforeWrite struct {
	reads  map[string]PathsFunc
	writes map[string]PathsFunc
	moves  map[string]MovesFunc
	files  func(*tools.Call) (Files, error)
}

// NewReadBeforeWrite returns the policy. reads and writes map tool names to
// the paths their params name; moves maps the tools that move files to the
// moves their params make, after which what the session knew of a moved
// path is known of its new path (a move tool that may replace a file names
// it among writes too); files finds a call's workspace (the call's own view
// of it, an Observer, once the call has a transaction).
func NewReadBeforeWrite(reads, writes map[string]PathsFunc, moves map[string]MovesFunc, files func(*tools.Call) (Files, error)) *ReadBeforeWrite {
	return &ReadBeforeWrite{reads: reads, writes: writes, moves: moves, files: files}
}

// Name returns "read_before_write".
func (p *ReadBeforeWrite) Name() string { return "read_before_write" }

// Check denies a write to an existing file the session does not know, or
// knows in an older version. When the files are a Locker, it first locks
// the paths, waiting no longer than the call's deadline; the check and the
// tool's write then happen under one lock. This is the one place where the
// check is made, for a tool called by the client and for each step of a
// tool acting for others (tools.Call.Authorise) alike.
func (p *ReadBeforeWrite) Check(call *tools.Call) error {
	pathsOf, ok := p.writes[call.Tool.Name()]
	if !ok {
		return nil
	}
	fs, err := p.files(call)
	if err != nil {
		return err
	}
	paths := pathsOf(call.Params)
	if l, ok := fs.(Locker); ok {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !call.Deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, call.Deadline)
		}
		unlock, err := l.Lock(ctx, call.ID, paths)
		cancel()
		if err != nil {
			return err
		}
		call.Finally(func(*tools.Outcome) { unlock() })
	}
	return p.CheckPaths(call.Session, fs, paths)
}

// CheckPaths applies the policy to writes of paths in fs. Tools that write
// several files in one call (apply_edits) use it for each operation. Paths
// that do not normalise are allowed: the tool reports them better. A file
// whose version cannot be read is denied.
func (p *ReadBeforeWrite) CheckPaths(s *session.Session, fs Files, paths []string) (err error) {
	defer merkle.Recover(&err) // a part of a stored memory not read
	mem, _ := session.Get(s, known)
	for _, raw := range paths {
		path, err := fs.Normalize(raw)
		if err != nil {
			continue
		}
		v, exists, err := fs.Version(path)
		if err != nil {
			return fmt.Errorf("read_before_write: %s: %w", path, err)
		}
		if !exists {
			continue
		}
		seen, ok := mem.Get(path)
		switch {
		case !ok:
			d := Deny(p.Name(), fmt.Sprintf("File '%s' must be read before overwriting.", path))
			d.Missing = "record of reading " + path
			return d
		case seen != v:
			return Deny(p.Name(), fmt.Sprintf("File '%s' changed since it was last read; read it again before writing.", path))
		}
	}
	return nil
}

// OnResult remembers the current version of every file a successful read or
// write named; after a move, see Moved.
func (p *ReadBeforeWrite) OnResult(call *tools.Call, out *tools.Outcome) (err error) {
	defer merkle.Recover(&err) // a part of a stored memory not read
	if moves, ok := p.moves[call.Tool.Name()]; ok {
		fs, err := p.files(call)
		if err != nil {
			return err
		}
		p.Moved(call.Session, fs, moves(call.Params))
		return nil
	}
	paths, ok := p.reads[call.Tool.Name()]
	if !ok {
		if paths, ok = p.writes[call.Tool.Name()]; !ok {
			return nil
		}
	}
	fs, err := p.files(call)
	if err != nil {
		return err
	}
	return p.Remember(call.Session, fs, paths(call.Params))
}

// Remember records the current versions of paths in fs as known to the
// session (or, when fs is an Observer, the versions the call saw); a path
// that no longer exists is forgotten. When the session knew them so
// already, its memory stays the same value, which a store then need not
// write again.
func (p *ReadBeforeWrite) Remember(s *session.Session, fs Files, paths []string) (err error) {
	defer merkle.Recover(&err) // a part of a stored memory not read
	mem, _ := session.Get(s, known)
	changed := false
	for _, raw := range paths {
		path, err := fs.Normalize(raw)
		if err != nil {
			continue
		}
		v, exists, seen := "", false, false
		if o, ok := fs.(Observer); ok {
			v, exists, seen = o.Observed(path)
		}
		if !seen {
			if v, exists, err = fs.Version(path); err != nil {
				return fmt.Errorf("read_before_write: %w", err)
			}
		}
		switch prev, ok := mem.Get(path); {
		case exists && (!ok || prev != v):
			mem, changed = mem.Set(path, v), true
		case !exists && ok:
			mem, changed = mem.Delete(path), true
		}
	}
	if changed {
		session.Set(s, known, mem)
	}
	return nil
}

// Moved carries what the session knew over to the new paths of moves: the
// version it knew of a moved file, or of each file under a moved
// directory, becomes its version at the new path, and what it knew of the
// paths a move replaced is forgotten. Content moves unchanged, so a file
// known before its move is known after it, and one unknown stays unknown.
// Paths that do not normalise are skipped.
func (p *ReadBeforeWrite) Moved(s *session.Session, fs Files, moves []Move) {
	mem, ok := session.Get(s, known)
	if !ok {
		return
	}
	before := mem
	for _, m := range moves {
		from, err := fs.Normalize(m.From)
		if err != nil {
			continue
		}
		to, err := fs.Normalize(m.To)
		if err != nil {
			continue
		}
		carried := map[string]string{}
		for path, v := range within(mem, from) {
			carried[to+path[len(from):]] = v
		}
		for path := range within(mem, to) {
			mem = mem.Delete(path)
		}
		for path := range within(mem, from) {
			mem = mem.Delete(path)
		}
		for path, v := range carried {
			mem = mem.Set(path, v)
		}
	}
	if mem != before {
		session.Set(s, known, mem)
	}
}

// within returns the entries of mem at dir or under it, visiting no
// other (the memory is sorted by path, and the paths under dir follow
// dir+"/").
func within(mem merkle.Map[string], dir string) map[string]string {
	out := map[string]string{}
	if v, ok := mem.Get(dir); ok {
		out[dir] = v
	}
	for path, v := range mem.From(dir + "/") {
		if _, ok := under(path, dir); !ok {
			break
		}
		out[path] = v
	}
	return out
}

// under returns what follows dir in path when path is dir or lies under it
// ("" or "/rest").
func under(path, dir string) (string, bool) {
	if rest, ok := strings.CutPrefix(path, dir); ok && (rest == "" || rest[0] == '/') {
		return rest, true
	}
	return "", false
}
