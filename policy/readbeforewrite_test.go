package policy_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// memFS is a workspace kept in memory: path to content, and a version that
// is a counter bumped by every write, whoever makes it.
type memFS struct {
	mu       sync.Mutex
	content  map[string]string
	versions map[string]int
	next     int
	failOn   string // Version fails for this path
}

func newMemFS(files map[string]string) *memFS {
	fs := &memFS{content: map[string]string{}, versions: map[string]int{}}
	for p, c := range files {
		if err := fs.write(p, c); err != nil {
			panic(err)
		}
	}
	return fs
}

// Normalize collapses repeated and leading slashes and dot segments; a path
// that is empty or leaves the workspace is an error.
func (fs *memFS) Normalize(p string) (string, error) {
	clean := strings.TrimPrefix(path.Clean("/"+p), "/")
	if strings.TrimSpace(p) == "" || clean == "" || strings.Contains(p, "..") {
		return "", fmt.Errorf("bad path %q", p)
	}
	return clean, nil
}

func (fs *memFS) Version(p string) (string, bool, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if p == fs.failOn {
		return "", false, errors.New("disk on fire")
	}
	v, ok := fs.versions[p]
	if !ok {
		return "", false, nil
	}
	return fmt.Sprint(v), true, nil
}

func (fs *memFS) write(p, c string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.Normalize(p)
	if err != nil {
		return err
	}
	fs.next++
	fs.content[n] = c
	fs.versions[n] = fs.next
	return nil
}

func (fs *memFS) remove(p string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.content, p)
	delete(fs.versions, p)
}

func (fs *memFS) read(p string) (string, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.Normalize(p)
	if err != nil {
		return "", false
	}
	c, ok := fs.content[n]
	return c, ok
}

type fileParams struct {
	Path    string `json:"path" jsonschema:"The file."`
	Content string `json:"content,omitempty" jsonschema:"What to write."`
}

type multiParams struct {
	Paths []string `json:"paths" jsonschema:"The files."`
}

func pathOf(p any) []string { return []string{p.(fileParams).Path} }

func pathsOf(p any) []string { return p.(multiParams).Paths }

// workspace bundles the in-memory files with real read and write tools
// and the policy configured for them.
type workspace struct {
	fs                      *memFS
	read, write, edit, list *tools.Tool
	policy                  *policy.ReadBeforeWrite
}

func newWorkspace(t testing.TB, files map[string]string) *workspace {
	t.Helper()
	w := &workspace{fs: newMemFS(files)}
	w.read = tools.New("read_file", "Reads a file.", tools.Annotations{Title: "Read", ReadOnly: true},
		func(_ *tools.Context, p fileParams) (tools.Result[string], error) {
			c, ok := w.fs.read(p.Path)
			if !ok {
				return tools.Failf[string]("No file %s.", p.Path), nil
			}
			return tools.OK("", c), nil
		})
	w.write = tools.New("write_file", "Writes a file.", tools.Annotations{Title: "Write"},
		func(_ *tools.Context, p fileParams) (tools.Result[any], error) {
			if err := w.fs.write(p.Path, p.Content); err != nil {
				return tools.Failf[any]("Cannot write %s: %v.", p.Path, err), nil
			}
			return tools.OK[any]("Wrote "+p.Path+".", nil), nil
		})
	w.edit = tools.New("edit_files", "Writes several files.", tools.Annotations{Title: "Edit"},
		func(_ *tools.Context, p multiParams) (tools.Result[any], error) {
			for _, path := range p.Paths {
				if err := w.fs.write(path, "edited"); err != nil {
					return tools.Failf[any]("Cannot write %s: %v.", path, err), nil
				}
			}
			return tools.OK[any]("Edited.", nil), nil
		})
	w.list = tools.New("list_files", "Lists files.", tools.Annotations{Title: "List", ReadOnly: true},
		func(_ *tools.Context, p noParams) (tools.Result[any], error) { return tools.OK[any]("", nil), nil })
	for _, tl := range []*tools.Tool{w.read, w.write, w.edit, w.list} {
		if err := tl.Check(); err != nil {
			t.Fatal(err)
		}
	}
	w.policy = policy.NewReadBeforeWrite(
		map[string]policy.PathsFunc{"read_file": pathOf},
		map[string]policy.PathsFunc{"write_file": pathOf, "edit_files": pathsOf},
		nil,
		func(*tools.Call) (policy.Files, error) { return w.fs, nil },
	)
	return w
}

// step is one action in a ReadBeforeWrite scenario.
type step struct {
	op   string // read, write, edit (paths separated by commas), other (a write by someone else), rm, list
	path string
	want string // the call's text; for "other" and "rm", unused
}

func (w *workspace) run(t *testing.T, s *session.Session, st step) *tools.Outcome {
	t.Helper()
	var call *tools.Call
	switch st.op {
	case "read":
		call = &tools.Call{Tool: w.read, Session: s, Params: fileParams{Path: st.path}}
	case "write":
		call = &tools.Call{Tool: w.write, Session: s, Params: fileParams{Path: st.path, Content: "new"}}
	case "edit":
		call = &tools.Call{Tool: w.edit, Session: s, Params: multiParams{Paths: strings.Split(st.path, ",")}}
	case "list":
		call = &tools.Call{Tool: w.list, Session: s, Params: noParams{}}
	case "other":
		if err := w.fs.write(st.path, "someone else's"); err != nil {
			t.Fatal(err)
		}
		return nil
	case "rm":
		w.fs.remove(st.path)
		return nil
	default:
		t.Fatalf("unknown op %q", st.op)
	}
	return pipeline(t, []policy.Policy{w.policy}, call)
}

const (
	mustRead = "File '%s' must be read before overwriting."
	changed  = "File '%s' changed since it was last read; read it again before writing."
)

func TestReadBeforeWrite(t *testing.T) {
	files := map[string]string{"a/b.txt": "old", "c.txt": "old", "d.txt": "old"}
	tests := []struct {
		name  string
		steps []step
	}{
		{"new file may be created", []step{
			{"write", "new.txt", "Wrote new.txt."},
		}},
		{"new file in a new directory", []step{
			{"write", "x/y/z.txt", "Wrote x/y/z.txt."},
		}},
		{"existing file not read is denied", []step{
			{"write", "c.txt", fmt.Sprintf(mustRead, "c.txt")},
		}},
		{"existing file after a read is allowed", []step{
			{"read", "c.txt", "\"old\""},
			{"write", "c.txt", "Wrote c.txt."},
		}},
		{"the session's own write counts as knowing the file", []step{
			{"read", "c.txt", "\"old\""},
			{"write", "c.txt", "Wrote c.txt."},
			{"write", "c.txt", "Wrote c.txt."},
		}},
		{"a file the session created may be edited again", []step{
			{"write", "new.txt", "Wrote new.txt."},
			{"write", "new.txt", "Wrote new.txt."},
		}},
		{"changed by someone else after the read", []step{
			{"read", "c.txt", "\"old\""},
			{"other", "c.txt", ""},
			{"write", "c.txt", fmt.Sprintf(changed, "c.txt")},
			{"read", "c.txt", "\"someone else's\""},
			{"write", "c.txt", "Wrote c.txt."},
		}},
		{"changed by someone else after the session's own write", []step{
			{"write", "new.txt", "Wrote new.txt."},
			{"other", "new.txt", ""},
			{"write", "new.txt", fmt.Sprintf(changed, "new.txt")},
		}},
		{"a read of another file does not help", []step{
			{"read", "d.txt", "\"old\""},
			{"write", "c.txt", fmt.Sprintf(mustRead, "c.txt")},
		}},
		{"paths are compared after normalisation: read a//b, write /a/b", []step{
			{"read", "a//b.txt", "\"old\""},
			{"write", "/a/b.txt", "Wrote /a/b.txt."},
		}},
		{"paths are compared after normalisation: read /a/b, write a//b", []step{
			{"read", "/a/b.txt", "\"old\""},
			{"write", "a//b.txt", "Wrote a//b.txt."},
		}},
		{"the denial names the normalised path", []step{
			{"write", "//a//b.txt", fmt.Sprintf(mustRead, "a/b.txt")},
		}},
		{"a failed read teaches nothing", []step{
			{"read", "missing.txt", "No file missing.txt."},
			{"other", "missing.txt", ""},
			{"write", "missing.txt", fmt.Sprintf(mustRead, "missing.txt")},
		}},
		{"a deleted file may be created again", []step{
			{"rm", "c.txt", ""},
			{"write", "c.txt", "Wrote c.txt."},
		}},
		{"a path that does not normalise is left to the tool", []step{
			{"write", "../etc/passwd", `Cannot write ../etc/passwd: bad path "../etc/passwd".`},
		}},
		{"several files: every existing one must be known", []step{
			{"read", "c.txt", "\"old\""},
			{"edit", "c.txt,new.txt,d.txt", fmt.Sprintf(mustRead, "d.txt")},
			{"read", "d.txt", "\"old\""},
			{"edit", "c.txt,new.txt,d.txt", "Edited."},
			{"write", "new.txt", "Wrote new.txt."},
		}},
		{"tools the policy does not name are not governed", []step{
			{"list", "", ""},
			{"write", "c.txt", fmt.Sprintf(mustRead, "c.txt")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t, files)
			s := newSession(t)
			for i, st := range tt.steps {
				o := w.run(t, s, st)
				if o == nil {
					continue
				}
				if got := o.Text(); got != st.want {
					t.Fatalf("step %d (%s %s): %q, want %q", i, st.op, st.path, got, st.want)
				}
				if strings.HasPrefix(st.want, "File '") {
					if o.Class != tools.ClassPolicy {
						t.Errorf("step %d: class %q, want policy", i, o.Class)
					}
					if content, _ := w.fs.read(st.path); content == "new" {
						t.Errorf("step %d: the denied write reached the file", i)
					}
				}
			}
		})
	}
}

func TestReadBeforeWriteDenial(t *testing.T) {
	w := newWorkspace(t, map[string]string{"p": "x"})
	s := newSession(t)
	err := w.policy.Check(&tools.Call{Tool: w.write, Session: s, Params: fileParams{Path: "p"}})
	var d *policy.Denial
	if !errors.As(err, &d) || d.Policy != "read_before_write" || d.Reason != "File 'p' must be read before overwriting." {
		t.Errorf("Check = %#v, want a read_before_write denial", err)
	}
	if w.policy.Name() != "read_before_write" {
		t.Errorf("Name() = %q", w.policy.Name())
	}
}

// TestReadBeforeWriteAcrossSessions: another session's write invalidates
// this session's read; each session knows only what it read itself.
func TestReadBeforeWriteAcrossSessions(t *testing.T) {
	w := newWorkspace(t, map[string]string{"shared.txt": "v1"})
	a, b := newSession(t), newSession(t)
	steps := []struct {
		s    *session.Session
		st   step
		name string
	}{
		{a, step{"read", "shared.txt", "\"v1\""}, "a reads"},
		{b, step{"write", "shared.txt", fmt.Sprintf(mustRead, "shared.txt")}, "b has not read it"},
		{b, step{"read", "shared.txt", "\"v1\""}, "b reads"},
		{b, step{"write", "shared.txt", "Wrote shared.txt."}, "b writes"},
		{a, step{"write", "shared.txt", fmt.Sprintf(changed, "shared.txt")}, "a's read is stale"},
		{b, step{"write", "shared.txt", "Wrote shared.txt."}, "b knows its own write"},
		{a, step{"read", "shared.txt", "\"new\""}, "a reads again"},
		{a, step{"write", "shared.txt", "Wrote shared.txt."}, "a writes"},
	}
	for _, st := range steps {
		if got := w.run(t, st.s, st.st).Text(); got != st.st.want {
			t.Fatalf("%s: %q, want %q", st.name, got, st.st.want)
		}
	}
}

func TestReadBeforeWriteRollsBack(t *testing.T) {
	w := newWorkspace(t, map[string]string{"p.txt": "old"})
	s := newSession(t)
	read := &tools.Call{Tool: w.read, Session: s, Params: fileParams{Path: "p.txt"}}
	write := &tools.Call{Tool: w.write, Session: s, Params: fileParams{Path: "p.txt"}}

	// A read whose transaction rolls back is forgotten.
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.policy.OnResult(read, &tools.Outcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.Check(write); err != nil {
		t.Fatalf("inside the transaction, after the read: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.Check(write); err == nil || err.Error() != fmt.Sprintf(mustRead, "p.txt") {
		t.Errorf("after Rollback: Check = %v, want the read forgotten", err)
	}

	// The same through the pipeline: a later policy fails the call in its
	// OnResult, after ReadBeforeWrite has remembered the read.
	var trace []string
	failing := &fakePolicy{name: "after", trace: &trace, result: errors.New("audit log full")}
	o := pipeline(t, []policy.Policy{w.policy, failing}, read)
	if o.Success || o.Text() != "audit log full" {
		t.Fatalf("read with a failing hook: %+v", o)
	}
	if o := pipeline(t, []policy.Policy{w.policy}, write); o.Text() != fmt.Sprintf(mustRead, "p.txt") {
		t.Errorf("write after a rolled-back read: %q, want the denial", o.Text())
	}
}

func TestReadBeforeWriteRemember(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a": "1", "b": "2"})
	s := newSession(t)
	if err := w.policy.Remember(s, w.fs, []string{"/a", "b", "../bad"}); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.CheckPaths(s, w.fs, []string{"a", "//b", "new"}); err != nil {
		t.Errorf("after Remember: %v", err)
	}
	// Remembering what the session knows already keeps its memory the
	// same value, which a store need not write again.
	before := s.Slices()["policy.read_before_write"]
	if err := w.policy.Remember(s, w.fs, []string{"a", "b", "gone"}); err != nil {
		t.Fatal(err)
	}
	if s.Slices()["policy.read_before_write"] != before {
		t.Error("Remember of known versions replaced the memory")
	}
	// A file remembered, deleted and recreated by someone else is unknown.
	w.fs.remove("a")
	if err := w.policy.Remember(s, w.fs, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.fs.write("a", "3"); err != nil {
		t.Fatal(err)
	}
	if err := w.policy.CheckPaths(s, w.fs, []string{"a"}); err == nil || err.Error() != fmt.Sprintf(mustRead, "a") {
		t.Errorf("recreated file: %v, want must-read denial", err)
	}
	// A workspace that cannot report a version fails Remember.
	w.fs.failOn = "b"
	if err := w.policy.Remember(s, w.fs, []string{"b"}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Remember with a failing workspace = %v", err)
	}
}

func TestReadBeforeWriteWorkspaceError(t *testing.T) {
	errNoWS := errors.New("no workspace")
	w := newWorkspace(t, nil)
	p := policy.NewReadBeforeWrite(
		map[string]policy.PathsFunc{"read_file": pathOf},
		map[string]policy.PathsFunc{"write_file": pathOf},
		nil,
		func(*tools.Call) (policy.Files, error) { return nil, errNoWS },
	)
	s := newSession(t)
	if err := p.Check(&tools.Call{Tool: w.write, Session: s, Params: fileParams{Path: "x"}}); !errors.Is(err, errNoWS) {
		t.Errorf("Check = %v, want %v", err, errNoWS)
	}
	if err := p.OnResult(&tools.Call{Tool: w.read, Session: s, Params: fileParams{Path: "x"}}, &tools.Outcome{Success: true}); !errors.Is(err, errNoWS) {
		t.Errorf("OnResult = %v, want %v", err, errNoWS)
	}
	// Tools the policy does not name never reach the workspace.
	if err := p.Check(&tools.Call{Tool: w.list, Session: s}); err != nil {
		t.Errorf("Check(list) = %v", err)
	}
	if err := p.OnResult(&tools.Call{Tool: w.list, Session: s}, &tools.Outcome{Success: true}); err != nil {
		t.Errorf("OnResult(list) = %v", err)
	}
}

// lockingFS is a memFS that other sessions share, so it locks: it records
// the order of locks, version reads and unlocks.
type lockingFS struct {
	*memFS
	events  []string
	lockErr error
}

func (fs *lockingFS) Lock(ctx context.Context, call string, paths []string) (func(), error) {
	d, _ := ctx.Deadline()
	fs.events = append(fs.events, fmt.Sprintf("lock %s %v until %s", call, paths, d.Format(time.RFC3339)))
	if fs.lockErr != nil {
		return nil, fs.lockErr
	}
	return func() { fs.events = append(fs.events, "unlock") }, nil
}

func (fs *lockingFS) Version(p string) (string, bool, error) {
	fs.events = append(fs.events, "version "+p)
	return fs.memFS.Version(p)
}

// TestReadBeforeWriteLocksBeforeChecking: with files that lock, the check
// locks the paths the write names, with the call's deadline, before it
// reads a version; the lock is held until the call ends, and a lock
// that fails is the call's error, with no version read.
func TestReadBeforeWriteLocksBeforeChecking(t *testing.T) {
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name    string
		lockErr error
		want    []string
		text    string
	}{
		// The check's version, then OnResult's, then the call ends.
		{"allowed", nil, []string{"lock c1 [new.txt] until 2030-01-02T03:04:05Z", "version new.txt", "version new.txt", "unlock"}, "Wrote new.txt."},
		{"busy", errors.New("File 'new.txt' is being changed by another call; try again."), []string{"lock c1 [new.txt] until 2030-01-02T03:04:05Z"}, "File 'new.txt' is being changed by another call; try again."},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkspace(t, nil)
			fs := &lockingFS{memFS: w.fs, lockErr: c.lockErr}
			p := policy.NewReadBeforeWrite(nil, map[string]policy.PathsFunc{"write_file": pathOf}, nil,
				func(*tools.Call) (policy.Files, error) { return fs, nil })
			call := &tools.Call{ID: "c1", Tool: w.write, Session: newSession(t), Params: fileParams{Path: "new.txt"}, Deadline: deadline}
			o := tools.Finalise(func(ctx context.Context, call *tools.Call) *tools.Outcome {
				return pipeline(t, []policy.Policy{p}, call)
			})(context.Background(), call)
			if o.Text() != c.text {
				t.Errorf("the call: %q, want %q", o.Text(), c.text)
			}
			got := strings.Join(fs.events, "\n")
			if want := strings.Join(c.want, "\n"); got != want {
				t.Errorf("events:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// move renames a file in the memFS keeping its version, as a workspace
// whose version is a hash of the content does.
func (fs *memFS) move(from, to string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.content[to], fs.versions[to] = fs.content[from], fs.versions[from]
	delete(fs.content, from)
	delete(fs.versions, from)
}

// TestReadBeforeWriteMoved: what the session knew follows a moved file or
// directory to its new path, and a replaced file is forgotten.
func TestReadBeforeWriteMoved(t *testing.T) {
	files := map[string]string{"a": "1", "d/x": "2", "d/y": "3", "c": "4", "u": "5"}
	cases := []struct {
		name    string
		moves   []policy.Move     // made in the files and told to Moved
		known   []string          // may be written after the moves
		unknown []string          // must be read first after the moves
		renames map[string]string // the files the moves rename, from to
	}{
		{"file", []policy.Move{{"a", "b"}}, []string{"b", "c"}, []string{"u"}, map[string]string{"a": "b"}},
		{"directory", []policy.Move{{"/d", "e//"}}, []string{"e/x"}, []string{"e/y"}, map[string]string{"d/x": "e/x", "d/y": "e/y"}},
		{"unknown over known", []policy.Move{{"u", "c"}}, []string{"a"}, []string{"c"}, map[string]string{"u": "c"}},
		{"prefix is not a parent", []policy.Move{{"d/x", "dd"}}, []string{"dd"}, []string{"d/y"}, map[string]string{"d/x": "dd"}},
		{"bad path", []policy.Move{{"../a", "b"}}, []string{"a"}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkspace(t, files)
			s := newSession(t)
			if err := w.policy.Remember(s, w.fs, []string{"a", "d/x", "c"}); err != nil {
				t.Fatal(err)
			}
			for from, to := range c.renames {
				w.fs.move(from, to)
			}
			w.policy.Moved(s, w.fs, c.moves)
			for _, p := range c.known {
				if err := w.policy.CheckPaths(s, w.fs, []string{p}); err != nil {
					t.Errorf("%s: %v, want allowed", p, err)
				}
			}
			for _, p := range c.unknown {
				if err := w.policy.CheckPaths(s, w.fs, []string{p}); err == nil || err.Error() != fmt.Sprintf(mustRead, p) {
					t.Errorf("%s: %v, want the must-read denial", p, err)
				}
			}
		})
	}
}
