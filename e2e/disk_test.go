package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// appendEdit is an edit_file (or apply_edits edit) that puts line before
// the file's END marker.
func appendEdit(path, line string) map[string]any {
	return map[string]any{"file_path": path, "old_string": "END\n", "new_string": line + "\nEND\n"}
}

// fileLines returns the lines of a workspace file without its END marker.
func fileLines(t *testing.T, dir, p string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[len(lines)-1] != "END" {
		t.Fatalf("%s does not end with END: %q", p, data)
	}
	return lines[:len(lines)-1]
}

// checkNoTemporaryFiles checks that no temporary file of an atomic write
// is left in dir, and no journal or lock in the state directory.
func checkNoTemporaryFiles(t *testing.T, dir, state string) {
	t.Helper()
	for _, p := range leftInFlight(dir, state) {
		t.Errorf("left behind: %s", p)
	}
}

// TestProcessesShareADiskWorkspace: three wink-mcp processes on one
// directory and state directory append lines to one file, each line an
// edit_file. With read-before-write on, each reads the file first and
// retries when the policy says it changed since; with it off, every edit
// must succeed. Either way every acknowledged edit is in the file at the
// end, once, and no other: the lock of the file excludes other processes
// from the check to the write.
func TestProcessesShareADiskWorkspace(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string
		attempts int
	}{
		{"read-before-write", "", 30},
		{"no policy", "policies:\n  read_before_write: false\n", 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("END\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The processes share the state directory (the journals and
			// locks of the workspace); one process at a time may own its
			// session store, so they keep their sessions in memory.
			args := []string{"--workspace", dir, "--state-dir", state, "--store", "memory"}
			if c.config != "" {
				cfg := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(cfg, []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfg)
			}
			const procs = 3
			var mu sync.Mutex
			acked := map[string]bool{}
			denied := 0
			var wg sync.WaitGroup
			for i := range procs {
				p := start(t, "", args...)
				p.initialize()
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := 1
					for k := range c.attempts {
						if c.config == "" {
							r := decodeToolResult(t, p.call(id, "tools/call", callTool("read_file", map[string]any{"file_path": "shared.txt"})))
							if id++; r.IsError {
								t.Errorf("read_file: %s", r.Content[0].Text)
								return
							}
						}
						line := fmt.Sprintf("p%d-%d", i, k)
						r := decodeToolResult(t, p.call(id, "tools/call", callTool("edit_file", appendEdit("shared.txt", line))))
						id++
						mu.Lock()
						switch {
						case !r.IsError:
							acked[line] = true
						case c.config == "" && strings.Contains(r.Content[0].Text, "changed since it was last read"):
							denied++
						default:
							t.Errorf("edit_file: %s", r.Content[0].Text)
						}
						mu.Unlock()
					}
					p.closeStdin()
					if code := p.wait(); code != 0 {
						t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
					}
				}()
			}
			wg.Wait()
			lines := fileLines(t, dir, "shared.txt")
			seen := map[string]bool{}
			for _, l := range lines {
				if !acked[l] || seen[l] {
					t.Errorf("line %q is in the file but was not acknowledged, or is there twice", l)
				}
				seen[l] = true
			}
			if len(seen) != len(acked) {
				t.Errorf("%d of %d acknowledged edits are in the file", len(seen), len(acked))
			}
			t.Logf("%d processes: %d acknowledged edits, all in the file; %d denied as stale", procs, len(acked), denied)
			checkNoTemporaryFiles(t, dir, state)
		})
	}
}

// TestKillMidCallsAndRestart kills a wink-mcp process with SIGKILL 20
// times while it runs a stream of apply_edits (each appends one line to
// three files, or does so and then fails on a last operation) and
// write_file calls, and restarts it each time on the same directory and
// state directory. After every restart: every acknowledged call is there
// whole; no call is there by half (a line in some of its three files but
// not all); no failed call's line is anywhere; every file a write_file
// created holds all of its content; no temporary file is left.
func TestKillMidCallsAndRestart(t *testing.T) {
	const rounds, batch = 20, 24
	files := []string{"f0.txt", "f1.txt", "f2.txt"}
	dir, state := t.TempDir(), t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("END\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(14, 4))
	acked := map[string]bool{}  // lines of apply_edits calls acknowledged
	failed := map[string]bool{} // lines of calls answered with an error
	written := map[string]string{}
	check := func(when string) {
		t.Helper()
		count := map[string]int{}
		for _, f := range files {
			for _, l := range fileLines(t, dir, f) {
				count[l]++
			}
		}
		for l, n := range count {
			switch {
			case strings.HasPrefix(l, "fail-") || failed[l]:
				t.Errorf("%s: the line of a failed call, %q, is in %d files", when, l, n)
			case n != len(files):
				t.Errorf("%s: %q is in %d of the %d files of its call", when, l, n, len(files))
			}
		}
		for l := range acked {
			if count[l] != len(files) {
				t.Errorf("%s: acknowledged %q is in %d files", when, l, count[l])
			}
		}
		for p, content := range written {
			if data, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(data) != content {
				t.Errorf("%s: acknowledged write of %s: %q, %v", when, p, data, err)
			}
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "w"))
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, "w", e.Name()))
			if strings.HasPrefix(e.Name(), ".wink-tmp-") || strings.TrimSuffix(e.Name(), ".txt") != string(data) {
				t.Errorf("%s: w/%s holds %q", when, e.Name(), data)
			}
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".wink-tmp-") {
				t.Errorf("%s: temporary file left: %s", when, p)
			}
			return nil
		})
	}
	args := []string{"--workspace", dir, "--state-dir", state}
	inFlight, putBack := 0, 0
	for round := range rounds {
		p := start(t, "", args...)
		p.initialize()
		if strings.Contains(p.stderr.String(), "put back calls a dead process left in flight") {
			putBack++
		}
		check(fmt.Sprintf("restart %d", round))
		for i, f := range files {
			if r := decodeToolResult(t, p.call(i+1, "tools/call", callTool("read_file", map[string]any{"file_path": f}))); r.IsError {
				t.Fatalf("read_file: %s", r.Content[0].Text)
			}
		}
		var reqs strings.Builder
		lines := map[string]string{} // request id -> line
		for j := range batch {
			id := fmt.Sprint(100 + j)
			line := fmt.Sprintf("r%d-%d", round, j)
			var call map[string]any
			switch j % 4 {
			case 3:
				call = callTool("write_file", map[string]any{"file_path": "w/" + line + ".txt", "content": line})
			case 2:
				line = "fail-" + line
				fallthrough
			default:
				var edits []map[string]any
				for _, f := range files {
					e := appendEdit(f, line)
					e["op"] = "edit"
					edits = append(edits, e)
				}
				if j%4 == 2 {
					edits = append(edits, map[string]any{"op": "edit", "file_path": files[0], "old_string": "no such text", "new_string": "x"})
				}
				call = callTool("apply_edits", map[string]any{"edits": edits})
			}
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 100 + j, "method": "tools/call", "params": call})
			reqs.Write(append(req, '\n'))
			lines[id] = line
		}
		go func() { _, _ = p.stdin.Write([]byte(reqs.String())) }()
		killAfter := rng.IntN(batch - 4)
		answered := map[string]bool{}
		for len(answered) < batch {
			if len(answered) == killAfter {
				// At a random point of the calls that follow.
				time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
				if err := p.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			f, ok := p.await("")
			if !ok {
				break
			}
			id := compactJSON(f.ID)
			answered[id] = true
			r := decodeToolResult(t, f)
			line := lines[id]
			switch {
			case r.IsError:
				failed[line] = true
				if !strings.HasPrefix(line, "fail-") {
					t.Errorf("request %s (%s) failed: %s", id, line, r.Content[0].Text)
				}
			case strings.HasPrefix(line, "fail-"):
				t.Errorf("request %s (%s) succeeded, want a failure", id, line)
			case strings.HasPrefix(r.Content[0].Text, "Created w/"):
				written["w/"+line+".txt"] = line
			default:
				acked[line] = true
			}
		}
		_ = p.cmd.Wait()
		p.exited = true
		p.cancel()
		inFlight += batch - len(answered)
	}
	p := start(t, "", args...)
	p.initialize()
	check("the last restart")
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	checkNoTemporaryFiles(t, dir, state)
	t.Logf("%d kills, after %d of which the restart put back a call cut short; %d apply_edits and %d write_file calls acknowledged, %d answered as failed, %d unanswered", rounds, putBack, len(acked), len(written), len(failed), inFlight)
	if len(acked) == 0 || putBack == 0 {
		t.Error("the test did not exercise acknowledged calls and calls cut short both")
	}
}
