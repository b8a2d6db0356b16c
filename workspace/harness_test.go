package workspace

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name.golden, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// backendKind builds a backend holding files.
type backendKind struct {
	name string
	open func(t testing.TB, files map[string]string) (*Backend, string)
}

var backends = []backendKind{
	{"memory", func(t testing.TB, files map[string]string) (*Backend, string) {
		m := map[string][]byte{}
		for p, c := range files {
			m[p] = []byte(c)
		}
		b, err := NewMemory(m)
		if err != nil {
			t.Fatal(err)
		}
		return b, ""
	}},
	{"disk", func(t testing.TB, files map[string]string) (*Backend, string) {
		dir := t.TempDir()
		for p, c := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := OpenDisk(dir, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b, dir
	}},
}

// eachBackend runs fn as a subtest for each backend: the shared suite.
func eachBackend(t *testing.T, fn func(t *testing.T, bk backendKind)) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) { fn(t, bk) })
	}
}

// harness is a server with the workspace section over one backend.
type harness struct {
	t   testing.TB
	srv *server.Server
	b   *Backend
	dir string          // the disk backend's directory
	cs  *mcptest.Client // the client of call and mustCall
}

type harnessOpts struct {
	opts     Options
	extra    []*sections.Section
	policies []policy.Policy
	deadline time.Duration
}

func newHarness(t testing.TB, bk backendKind, files map[string]string, ho ...harnessOpts) *harness {
	t.Helper()
	var o harnessOpts
	if len(ho) > 0 {
		o = ho[0]
	}
	b, dir := bk.open(t, files)
	tree, err := sections.NewTree(append([]*sections.Section{New(b, o.opts)}, o.extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Policies: o.policies, Deadline: o.deadline,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, b: b, dir: dir, cs: mcptest.NewClient(t, srv.MCP(), "s1")}
}

// newHarnessOver is newHarness for a backend the test built.
func newHarnessOver(t testing.TB, b *Backend, dir string, ho ...harnessOpts) *harness {
	t.Helper()
	bk := backendKind{name: b.Kind(), open: func(testing.TB, map[string]string) (*Backend, string) { return b, dir }}
	return newHarness(t, bk, nil, ho...)
}

// client returns another client of the server, with the session id id.
func (h *harness) client(id string) *mcptest.Client { return mcptest.NewClient(h.t, h.srv.MCP(), id) }

// call calls a tool as the harness's client with args (a JSON object) and
// returns the text the model reads and whether the call failed.
func (h *harness) call(tool, args string) (string, bool) {
	h.t.Helper()
	return h.callAs(context.Background(), h.cs, tool, args)
}

// callAs calls a tool as client cs with args (a JSON object) and returns
// the text the model reads and whether the call failed.
func (h *harness) callAs(ctx context.Context, cs *mcptest.Client, tool, args string) (string, bool) {
	h.t.Helper()
	r := cs.Call(ctx, tool, json.RawMessage(args), nil)
	return r.Said(), r.IsError
}

// mustCall calls a tool that must succeed and returns its text.
func (h *harness) mustCall(tool, args string) string {
	h.t.Helper()
	text, isErr := h.call(tool, args)
	if isErr {
		h.t.Fatalf("%s %s failed: %s", tool, args, text)
	}
	return text
}

// session returns the session of client cs.
func (h *harness) session(cs *mcptest.Client) *session.Session {
	h.t.Helper()
	s, err := h.srv.Sessions().Get(cs.SessionID())
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// dump describes the whole tree of client cs's workspace: every directory
// and every file with its content, for byte-for-byte comparisons. On disk it
// reads the real directory with the os package, so it also sees what the
// workspace hides (temporary files) and the files' modes.
func (h *harness) dump(cs *mcptest.Client) string {
	h.t.Helper()
	var lines []string
	if h.dir != "" {
		err := filepath.WalkDir(h.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(h.dir, p)
			if rel == "." {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
				lines = append(lines, filepath.ToSlash(rel)+"/ "+info.Mode().Perm().String())
			case d.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				lines = append(lines, filepath.ToSlash(rel)+" -> "+target)
			default:
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				lines = append(lines, filepath.ToSlash(rel)+" "+info.Mode().Perm().String()+" "+string(data))
			}
			return nil
		})
		if err != nil {
			h.t.Fatal(err)
		}
	} else {
		w := From(h.session(cs))
		_ = w.st.(*memStore).t.Load().walk("", func(k string, v *node) error {
			if v.dir {
				lines = append(lines, k+"/")
			} else {
				lines = append(lines, k+" "+string(v.file.data))
			}
			return nil
		})
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
