package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wink-mcp/wink-mcp/store"
)

// A format fixture (testdata/formats/N, made by the build that wrote
// format N with scripts/make-format-fixture).
type fixture struct {
	format int
	dir    string // the fixture as committed
	handle string // of its HTTP session
}

// fixtures returns the fixture of every format, oldest first.
func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	for f := 1; ; f++ {
		dir, err := filepath.Abs(filepath.Join("..", "testdata", "formats", strconv.Itoa(f)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "fixture.json"))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Handle string `json:"http_handle"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		out = append(out, fixture{format: f, dir: dir, handle: meta.Handle})
	}
	if len(out) != store.Format {
		t.Fatalf("fixtures of formats 1 to %d; want one for every format up to %d (scripts/make-format-fixture)", len(out), store.Format)
	}
	return out
}

// copy returns a copy of the fixture's state directory, and its
// configuration.
func (f fixture) copy(t *testing.T) (state, config string) {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(f.dir, "state"))); err != nil {
		t.Fatal(err)
	}
	return dst, filepath.Join(f.dir, "config.yaml")
}

// fixtureArgs are the flags of a process on a copy of a fixture: the
// sessions were last used when the fixture was made, long before any
// default idle limit.
func fixtureArgs(state, config string, more ...string) []string {
	return append([]string{"--state-dir", state, "--config", config, "--session-ttl", "876000h"}, more...)
}

// checkStdioFixture checks, over a stdio process on the fixture's state
// dir, that the session "proj" holds what the fixture's maker left: the
// plan, notes.md edited to "bye", src/oops.md undone, the calls in its
// log; then undoes the edit, and checks the checkpoint is there. It
// returns the process's stderr.
func checkStdioFixture(t *testing.T, state, config string) string {
	t.Helper()
	p := start(t, "", fixtureArgs(state, config, "--session", "proj")...)
	c := &stdioClient{p: p, modern: true}
	want := func(tool string, args map[string]any, text string) {
		t.Helper()
		if r := c.call(t, tool, args); r.IsError || !strings.Contains(r.text(), text) {
			t.Errorf("%s %v: %+v, want %q; stderr:\n%s", tool, args, r, text, p.stderr)
		}
	}
	want("planning_read_plan", map[string]any{}, "Objective: Ship formats\nStatus: active\n\n1 [in_progress] draft\n2 [pending] review")
	want("read_file", map[string]any{"file_path": "notes.md"}, "1 | bye")
	if r := c.call(t, "read_file", map[string]any{"file_path": "src/oops.md"}); !r.IsError {
		t.Errorf("src/oops.md, which was undone: %+v", r)
	}
	f := p.call(100, "resources/read", map[string]any{"uri": "wink://session/log", "_meta": modernMeta()})
	for _, tool := range []string{"planning_setup_plan", "planning_update_step", "edit_file", "session_checkpoint", "session_undo"} {
		if n := strings.Count(string(f.Result), `\"tool\": \"`+tool+`\"`); n != 1 {
			t.Errorf("the call log has %d calls of %s, want 1: %s", n, tool, truncate(f.Result))
		}
	}
	if n := strings.Count(string(f.Result), `\"tool\": \"write_file\"`); n != 2 {
		t.Errorf("the call log has %d calls of write_file, want 2: %s", n, truncate(f.Result))
	}
	want("session_undo", map[string]any{}, "undone: edit_file")
	want("read_file", map[string]any{"file_path": "notes.md"}, "1 | hello")
	want("session_restore", map[string]any{"name": "first"}, "first")
	want("read_file", map[string]any{"file_path": "notes.md"}, "1 | hello")
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	return p.stderr.String()
}

// checkHTTPFixture checks, over an HTTP server on the fixture's state dir,
// that the session of handle holds the plan and files, and that its
// history undoes.
func checkHTTPFixture(t *testing.T, state, config, handle string) {
	t.Helper()
	s := serveHTTP(t, fixtureArgs(state, config)...)
	c := &httpClient{url: s.url}
	want := func(tool string, args map[string]any, text string) {
		t.Helper()
		if r := c.call(t, tool, with(handle, args)); r.IsError || !strings.Contains(r.text(), text) {
			t.Errorf("%s %v: %+v, want %q; stderr:\n%s", tool, args, r, text, s.p.stderr)
		}
	}
	want("planning_read_plan", map[string]any{}, "1 [in_progress] draft\n2 [pending] review")
	want("read_file", map[string]any{"file_path": "notes.md"}, "1 | bye")
	want("session_undo", map[string]any{}, "undone: edit_file")
	want("read_file", map[string]any{"file_path": "notes.md"}, "1 | hello")
	stopServers(t, s)
}

// TestFormatFixtures: the state directory of every format, as the build
// that wrote it left it, is opened by this build, which migrates it and
// finds everything: the stdio session's plan, files, history and call
// log, and the HTTP session by its handle. A second process then reads
// the store as migrated.
func TestFormatFixtures(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(fmt.Sprintf("format=%d", f.format), func(t *testing.T) {
			state, config := f.copy(t)
			stderr := checkStdioFixture(t, state, config)
			migrated := strings.Contains(stderr, "migrated the session store")
			if migrated != (f.format < store.Format) {
				t.Errorf("format %d: migrated %v; stderr:\n%s", f.format, migrated, stderr)
			}
			checkHTTPFixture(t, state, config, f.handle)

			p := start(t, "", fixtureArgs(state, config, "--session", "proj")...)
			c := &stdioClient{p: p, modern: true}
			if r := c.call(t, "read_file", map[string]any{"file_path": "notes.md"}); r.IsError || !strings.Contains(r.text(), "1 | hello") {
				t.Errorf("after the migration, a second process: %+v; stderr:\n%s", r, p.stderr)
			}
			if strings.Contains(p.stderr.String(), "migrat") {
				t.Errorf("a store migrated before is migrated again:\n%s", p.stderr)
			}
		})
	}
}

// TestFormatMigrationKilled: a migration killed (SIGKILL) at each of its
// points, one run for each, and then run again, completes with nothing
// lost.
func TestFormatMigrationKilled(t *testing.T) {
	for _, f := range fixtures(t) {
		if f.format == store.Format {
			continue
		}
		for n := 1; ; n++ {
			if n > 50 {
				t.Fatalf("format %d: still killed at point %d", f.format, n)
			}
			state, config := f.copy(t)
			t.Setenv("WINK_TEST_MIGRATION_DIE_AT", strconv.Itoa(n))
			p := start(t, "", fixtureArgs(state, config, "--session", "proj")...)
			p.closeStdin()
			p.drain()
			err := p.cmd.Wait()
			p.exited = true
			var ee *exec.ExitError
			killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
			os.Unsetenv("WINK_TEST_MIGRATION_DIE_AT")
			if !killed && err != nil {
				t.Fatalf("format %d, point %d: %v; stderr:\n%s", f.format, n, err, p.stderr)
			}
			t.Run(fmt.Sprintf("format=%d/point=%d", f.format, n), func(t *testing.T) {
				checkStdioFixture(t, state, config)
			})
			if !killed {
				t.Logf("format %d: the migration has %d points", f.format, n-1)
				break
			}
		}
	}
}
