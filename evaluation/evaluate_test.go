package evaluation

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// TestMain runs the test binary as an evaluation child when it is started
// as one, as main does.
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(Child(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// modes run a test in process and in a child process.
var modes = map[string]bool{"in process": false, "child": true}

// harness is a server with the workspace and evaluation sections.
type harness struct {
	t   testing.TB
	cs  *mcptest.Client
	dir string // the disk workspace's directory; "" for memory
}

// backends open a workspace holding files, in memory or on disk.
var backends = map[string]func(t testing.TB, files map[string]string) (*workspace.Backend, string){
	"memory": func(t testing.TB, files map[string]string) (*workspace.Backend, string) {
		m := map[string][]byte{}
		for p, c := range files {
			m[p] = []byte(c)
		}
		b, err := workspace.NewMemory(m)
		if err != nil {
			t.Fatal(err)
		}
		return b, ""
	},
	"disk": func(t testing.TB, files map[string]string) (*workspace.Backend, string) {
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
		b, err := workspace.OpenDisk(dir, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b, dir
	},
}

func newHarness(t testing.TB, backend string, files map[string]string, opts Options, deadline time.Duration) *harness {
	t.Helper()
	b, dir := backends[backend](t, files)
	sec, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := sections.NewTree(workspace.New(b, workspace.Options{}), sec)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Deadline: deadline,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, cs: mcptest.NewClient(t, srv.MCP(), "s1"), dir: dir}
}

// call calls a tool and returns what the model reads and whether it failed.
func (h *harness) call(tool string, args any) (string, bool) {
	h.t.Helper()
	r := h.cs.Call(context.Background(), tool, args, nil)
	return r.Said(), r.IsError
}

// eval runs code with evaluate.
func (h *harness) eval(code string) (string, bool) {
	h.t.Helper()
	return h.call("evaluate", map[string]string{"code": code})
}

// read returns a file's content as read_file numbers it, or the failure.
func (h *harness) read(path string) string {
	h.t.Helper()
	text, _ := h.call("read_file", map[string]string{"file_path": path})
	return text
}

func TestEvaluate(t *testing.T) {
	for mode, child := range modes {
		t.Run(mode, func(t *testing.T) { testEvaluate(t, child) })
	}
}

func testEvaluate(t *testing.T, child bool) {
	h := newHarness(t, "memory", nil, Options{Child: child, MaxSteps: 100_000, MaxOutputBytes: 64}, 0)
	for _, tc := range []struct {
		name, code string
		fail       bool
		want       []string
		// child runs the case in child mode too (each child of the
		// race-enabled test binary takes a second to start).
		child bool
	}{
		{"value of the last line", "x = 2\nx * 21", false, []string{"Value: 42", "changed 0 files"}, true},
		{"dict value as JSON", `{"a": [1, True, None]}`, false, []string{`Value: {"a":[1,true,null]}`}, false},
		{"no value after a statement", "x = 1", false, []string{"(no output, no value, no files changed)"}, false},
		{"print is captured", "print('hello')\nprint(1, 2)", false, []string{"Output:\nhello\n1 2"}, true},
		{"output is capped", "for i in range(100):\n    print('0123456789')", false, []string{"[output capped]"}, true},
		{"json module", `json.decode('{"k": 3}')["k"] + 1`, false, []string{"Value: 4"}, false},
		{"function value is its repr", "def f():\n    pass\nf", false, []string{`Value: "\u003cfunction f\u003e"`}, false},
		{"syntax error names line and column", "x = 1\ny = (2 +\n", true, []string{"Syntax error at line 3, column 1:", "No file was changed."}, true},
		{"undefined name", "x = 1\nprint(y)", true, []string{"Error at line 2, column 7:", "undefined: y"}, false},
		{"import is refused with a hint", "import os", true, []string{"line 1, column 1", "Starlark has no import"}, false},
		{"class is refused with a hint", "class A:\n    pass", true, []string{"Starlark has no classes"}, false},
		{"try is refused with a hint", "try:\n    x = 1\nexcept:\n    pass", true, []string{"Starlark has no try/except"}, false},
		{"f-strings are refused with a hint", "n = 1\nprint(f\"{n}\")", true, []string{"Starlark has no f-strings"}, false},
		{"load is refused", "load('x.star', 'y')", true, []string{"load is not available"}, false},
		{"runtime error with its line", "x = 1\ny = x + 'a'", true, []string{"Error: unknown binary op: int + string", "at line 2, column 7, in <toplevel>"}, true},
		{"step budget", "while True:\n    pass", true, []string{"ran out of steps (the limit is 100000)"}, true},
		{"output before an error is shown", "print('so far')\nfail('stop')", true, []string{"stop", "Output before the error:\nso far"}, false},
	} {
		if child && !tc.child {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := h.eval(tc.code)
			if isErr != tc.fail {
				t.Fatalf("failed = %v, want %v: %s", isErr, tc.fail, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("result does not contain %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestEvaluateDeadline(t *testing.T) {
	for mode, child := range modes {
		t.Run(mode, func(t *testing.T) { testEvaluateDeadline(t, child) })
	}
}

// testEvaluateDeadline: the deadline cancels the interpreter, or kills the
// child.
func testEvaluateDeadline(t *testing.T, child bool) {
	h := newHarness(t, "memory", nil, Options{Child: child, MaxSteps: 1 << 62}, 300*time.Millisecond)
	start := time.Now()
	text, isErr := h.eval("fs.write('a.txt', 'x')\nwhile True:\n    pass")
	if !isErr {
		t.Fatalf("an endless loop succeeded: %s", text)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the loop ran %v past a 300ms deadline", d)
	}
	if got := h.read("a.txt"); !strings.Contains(got, "does not exist") {
		t.Errorf("the write of a stopped snippet stayed: %s", got)
	}
}

// TestEvaluateFiles runs the fs builtins on both backends: they see what
// the workspace tools see, hold to the same rules, and a failed snippet
// leaves the workspace as it was.
func TestEvaluateFiles(t *testing.T) {
	files := map[string]string{
		"a.txt":        "alpha\nbeta\n",
		"src/main.go":  "package main\n// TODO one\n",
		"src/util.go":  "package main\n",
		".gitignore":   "build/\n",
		"build/out.go": "// TODO ignored\n",
	}
	for name := range backends {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, name, files, Options{}, 0)
			for _, tc := range []struct {
				name, code string
				fail       bool
				want       string
			}{
				{"ls", "fs.ls('')", false, `Value: ["src/","a.txt"]`},
				{"glob leaves out ignored files", "fs.glob('**/*.go')", false, `Value: ["src/main.go","src/util.go"]`},
				{"grep", "[m['path'] + ':' + str(m['line']) for m in fs.grep('TODO', '**/*.go')]", false, `Value: ["src/main.go:2"]`},
				{"read", "fs.read('a.txt').splitlines()", false, `Value: ["alpha","beta"]`},
				{"missing file", "fs.read('nope.txt')", true, "fs.read: File does not exist: nope.txt"},
				{"path escape", "fs.read('../etc/passwd')", true, "fs.read: Path segments may not include '.' or '..'."},
				{"absolute path stays inside", "fs.read('/etc/passwd')", true, "File does not exist: etc/passwd"},
				{"ls of a file", "fs.ls('a.txt')", true, "a.txt is a file, not a directory."},
				{"bad glob", "fs.glob('[')", true, "Invalid glob pattern"},
				{"bad regexp", "fs.grep('(')", true, "Invalid regular expression"},
				{"unread file is not overwritten", "fs.write('src/util.go', 'x')", true, "File 'src/util.go' must be read before overwriting."},
				{"wrong arguments", "fs.write('a.txt')", true, "Error: fs.write: got 1 arguments, want 2"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					text, isErr := h.eval(tc.code)
					if isErr != tc.fail || !strings.Contains(text, tc.want) {
						t.Errorf("failed = %v (want %v), result:\n%s\nwant it to contain %q", isErr, tc.fail, text, tc.want)
					}
				})
			}

			// A snippet that reads a file may overwrite it, and creates
			// others; the result lists them.
			text, isErr := h.eval("fs.write('a.txt', fs.read('a.txt').upper())\nfs.write('new/b.txt', 'b')\nfs.write('a.txt', 'again')")
			if isErr || !strings.Contains(text, "Changed: a.txt, new/b.txt") || !strings.Contains(text, "changed 2 files") {
				t.Fatalf("writes failed or were not listed: %s", text)
			}
			if got := h.read("a.txt"); !strings.Contains(got, "again") {
				t.Errorf("a.txt = %s", got)
			}

			// A failing snippet undoes its writes, new and old.
			text, isErr = h.eval("fs.write('a.txt', fs.read('a.txt') + 'more')\nfs.write('c.txt', 'c')\nfail('no')")
			if !isErr {
				t.Fatalf("fail() succeeded: %s", text)
			}
			if got := h.read("a.txt"); strings.Contains(got, "more") {
				t.Errorf("a failed snippet's write stayed: %s", got)
			}
			if got := h.read("c.txt"); !strings.Contains(got, "does not exist") {
				t.Errorf("a failed snippet's new file stayed: %s", got)
			}
			if h.dir != "" {
				if _, err := os.Stat(filepath.Join(h.dir, "c.txt")); !os.IsNotExist(err) {
					t.Errorf("c.txt is on disk after the rollback: %v", err)
				}
			}

			// What read_file read, a snippet may overwrite: the policy's
			// memory is the session's.
			h.read("src/util.go")
			if text, isErr := h.eval("fs.write('src/util.go', 'package util\\n')"); isErr {
				t.Errorf("writing a file read with read_file failed: %s", text)
			}
		})
	}
}

// TestChildFiles: in a child, the fs builtins reach the workspace through
// the parent, under the same rules, and a failed snippet's writes are
// undone. (Few calls: a child of the race-enabled test binary takes a
// second to start.)
func TestChildFiles(t *testing.T) {
	h := newHarness(t, "memory", map[string]string{"a.txt": "alpha\n", "src/main.go": "// TODO\n"}, Options{Child: true}, 0)
	for _, tc := range []struct {
		code string
		fail bool
		want string
	}{
		{"[fs.ls(''), fs.glob('**/*.go'), fs.grep('TODO')[0]['path'], fs.read('a.txt')]", false, `Value: [["src/","a.txt"],["src/main.go"],"src/main.go","alpha\n"]`},
		{"fs.read('../x')", true, "fs.read: Path segments may not include '.' or '..'."},
		{"fs.write('src/main.go', 'x')", true, "File 'src/main.go' must be read before overwriting."},
		{"fs.write('b.txt', 'b')\nfail('no')", true, "no"},
		{"fs.write('a.txt', fs.read('a.txt') + 'beta\\n')", false, "Changed: a.txt"},
	} {
		text, isErr := h.eval(tc.code)
		if isErr != tc.fail || !strings.Contains(text, tc.want) {
			t.Errorf("%s: failed = %v (want %v), result:\n%s\nwant it to contain %q", tc.code, isErr, tc.fail, text, tc.want)
		}
	}
	if got := h.read("b.txt"); !strings.Contains(got, "does not exist") {
		t.Errorf("a failed snippet's write stayed: %s", got)
	}
	if got := h.read("a.txt"); !strings.Contains(got, "beta") {
		t.Errorf("a.txt = %s", got)
	}
}

// TestChildMemoryLimit: a child that allocates past its allowance dies,
// the call fails saying so, its writes are undone, and the server serves
// on.
func TestChildMemoryLimit(t *testing.T) {
	h := newHarness(t, "memory", nil, Options{Child: true, MaxMemoryBytes: 128 << 20}, 0)
	text, isErr := h.eval("fs.write('a.txt', 'x')\na = 'x' * (1 << 29)\nb = a + a\nlen(b)")
	if !isErr || !strings.Contains(text, "the snippet ran out of memory: it may use at most 128 MiB") {
		t.Fatalf("a 1 GiB allocation: failed = %v: %s", isErr, text)
	}
	if got := h.read("a.txt"); !strings.Contains(got, "does not exist") {
		t.Errorf("the write of a killed child stayed: %s", got)
	}
	if text, isErr := h.eval("fs.write('a.txt', 'y')\n1 + 1"); isErr || !strings.Contains(text, "Value: 2") {
		t.Errorf("the next snippet: %s", text)
	}
}

// TestEvaluateResult checks the structured result against its fields.
func TestEvaluateResult(t *testing.T) {
	h := newHarness(t, "memory", nil, Options{}, 0)
	r := h.cs.Call(context.Background(), "evaluate", map[string]string{"code": "print('p')\nfs.write('x', '1')\n[1, 2]"}, nil)
	if r.IsError {
		t.Fatal(r.Text())
	}
	got, _ := json.Marshal(map[string]any{"value": r.StructuredContent["value"], "output": r.StructuredContent["output"], "changed": r.StructuredContent["changed"]})
	if want := `{"changed":["x"],"output":"p\n","value":[1,2]}`; string(got) != want {
		t.Errorf("structured content = %s, want %s", got, want)
	}
}

func TestNewNeedsTheWorkspace(t *testing.T) {
	sec, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := sections.NewTree(sec)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := mcptest.NewClient(t, srv.MCP(), "s1").Call(context.Background(), "evaluate", map[string]string{"code": "1"}, nil)
	if !r.IsError {
		t.Errorf("evaluate without a workspace succeeded: %s", r.Text())
	}
}
