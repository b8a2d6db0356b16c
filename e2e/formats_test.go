package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// buildCommit builds the wink-mcp of a commit of this repository's
// history, or skips the test when the history does not hold it (a shallow
// clone, an archive).
func buildCommit(t *testing.T, commit string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git to build %s with: %v", commit, err)
	}
	if out, err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("commit %s is not in this clone's history (shallow?): %v %s", commit, err, out)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	// From the top: run in a subdirectory, git archive takes only it.
	unpack := exec.Command("sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", commit, src)
	unpack.Dir = ".."
	if out, err := unpack.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v %s", commit, err, out)
	}
	bin := filepath.Join(dir, "wink-mcp")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", commit, err, out)
	}
	return bin
}

// TestFormatDowngrade: a store of this build's format, opened by the build
// of the commit that wrote the format before (testdata/formats/N/COMMIT,
// built from the git history), is refused: the process exits non-zero
// naming both formats, and this build then reads everything. A build from
// before the store marked its format (format 1) cannot tell, and serves
// the sessions as unavailable: this build still reads everything after it.
func TestFormatDowngrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an earlier version")
	}
	fs := fixtures(t)
	prev := fs[len(fs)-2]
	commit, err := os.ReadFile(filepath.Join(prev.dir, "COMMIT"))
	if err != nil {
		t.Fatal(err)
	}
	old := buildCommit(t, strings.TrimSpace(string(commit)))

	state, config := fs[len(fs)-1].copy(t)
	p := start(t, "", fixtureArgs(state, config, "--session", "proj")...)
	if r := (&stdioClient{p: p, modern: true}).call(t, "planning_read_plan", map[string]any{}); r.IsError {
		t.Fatalf("this build: %+v; stderr:\n%s", r, p.stderr)
	}
	p.closeStdin()
	p.wait()

	cmd := exec.Command(old, fixtureArgs(state, config, "--session", "proj")...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"planning_read_plan","arguments":{},"_meta":` + compactJSON(mustJSON(t, modernMeta())) + "}}\n")
	out, err := cmd.CombinedOutput()
	// A build that prints no store format with --version predates the
	// format marker (every build of format 1, and 51e5643, which wrote
	// the fixture of format 2): it cannot tell.
	version, _ := exec.Command(old, "--version").Output()
	if prev.format == 1 || !strings.Contains(string(version), "store format") {
		t.Logf("the build of format %d predates the format marker; it answered (%v):\n%s", prev.format, err, out)
	} else {
		// The older build names the formats it reads as "format N" or
		// "formats 1 to N".
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(fmt.Sprintf(`\bformat %d\b`, store.Format)),
			regexp.MustCompile(fmt.Sprintf(`\b(format|formats 1 to) %d\b`, prev.format)),
		} {
			if err == nil || !want.Match(out) {
				t.Errorf("the build of format %d on a store of format %d: %v, want an exit naming %q:\n%s", prev.format, store.Format, err, want, out)
			}
		}
	}
	checkStdioFixture(t, state, config)
	checkHTTPFixture(t, state, config, fs[len(fs)-1].handle)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVersionNamesFormat: wink-mcp --version prints the store format it
// writes.
func TestVersionNamesFormat(t *testing.T) {
	out, err := exec.Command(binary, "--version").Output()
	if want := fmt.Sprintf("(store format %d)\n", store.Format); err != nil || !strings.HasPrefix(string(out), "wink-mcp ") || !strings.HasSuffix(string(out), want) {
		t.Errorf("--version: %q, %v; want a line ending %q", out, err, want)
	}
}

// setStoreFormat marks the streams of the embedded store in dir as holding
// format f, with a server of its own on dir's files (no process may hold
// the dir meanwhile), and returns what they were marked before.
func setStoreFormat(t *testing.T, dir, f string) string {
	t.Helper()
	srv, err := natsserver.NewServer(&natsserver.Options{DontListen: true, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the store's server did not start")
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	was := ""
	for _, name := range []string{"WINK_STATE", "WINK_LOG", "WINK_TASKS"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		if name == "WINK_STATE" {
			was = cfg.Metadata["wink-format"]
		}
		cfg.Metadata = map[string]string{"wink-format": f}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return was
}

// TestFormatNewerRefused: this build, given a store of a newer format than
// it writes, exits non-zero at startup, naming both formats, and leaves
// the store as it is; the build of that format (here, the store marked
// back) then reads everything.
func TestFormatNewerRefused(t *testing.T) {
	fs := fixtures(t)
	last := fs[len(fs)-1]
	state, config := last.copy(t)
	dir := filepath.Join(state, "store", "stdio-proj")
	newer := strconv.Itoa(store.Format + 1)
	setStoreFormat(t, dir, newer)

	p := start(t, "", fixtureArgs(state, config, "--session", "proj")...)
	p.closeStdin()
	if code := p.wait(); code == 0 {
		t.Errorf("exit code 0 on a store of format %s", newer)
	}
	for _, want := range []string{"holds format " + newer, fmt.Sprintf("reads formats 1 to %d", store.Format), dir} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, p.stderr)
		}
	}
	if was := setStoreFormat(t, dir, strconv.Itoa(store.Format)); was != newer {
		t.Errorf("the refused store is marked %q now, want %s as it was", was, newer)
	}
	checkStdioFixture(t, state, config)
}
