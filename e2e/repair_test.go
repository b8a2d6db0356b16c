package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// leftInFlight lists what calls in flight keep in a disk workspace and its
// state directory: temporary files of atomic writes, journals and locks
// (not the file "root" of a workspace's directory in the state directory,
// which names the workspace, nor the file "format" of journal/, nor the
// count of calls put back beside a workspace's directory, NAME.rollbacks).
func leftInFlight(ws, state string) []string {
	var out []string
	for _, root := range []string{ws, filepath.Join(state, "journal")} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (root != ws || strings.HasPrefix(d.Name(), ".wink-tmp-")) && (root == ws || d.Name() != "root" && p != filepath.Join(root, "format") && !strings.HasSuffix(p, ".rollbacks")) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// filesPerCall is how many files each apply_edits of
// TestSiblingRepairsDiskWorkspace writes.
const filesPerCall = 8

// TestSiblingRepairsDiskWorkspace: two stdio processes work on one disk
// workspace with one state directory. Writers make calls through the
// first, each an apply_edits that writes 8 files, until it is killed with
// SIGKILL with calls in flight. Without a restart, the second process puts
// back what the dead one left half done within seconds: each call's files
// are all there or none, every answered call's are there, and nothing is
// left in flight. wink-mcp recover, run afterwards, finds nothing to do.
func TestSiblingRepairsDiskWorkspace(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	args := []string{"--workspace", ws, "--state-dir", state}
	sibling := &stdioClient{p: start(t, "", args...), modern: true}
	if r := sibling.call(t, "ls", map[string]any{}); r.IsError {
		t.Fatalf("the sibling: %+v", r)
	}
	content := strings.Repeat("x", 32<<10) + "\n"
	for round := 1; ; round++ {
		m := newStdioMux(start(t, "", args...))
		var mu sync.Mutex
		answered := map[string]bool{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for n := 0; ; n++ {
					mark := fmt.Sprintf("r%dw%dn%d", round, w, n)
					var edits []map[string]any
					for i := range filesPerCall {
						edits = append(edits, map[string]any{"op": "write", "file_path": fmt.Sprintf("%s-%d.txt", mark, i), "content": content})
					}
					r, err := m.try("apply_edits", map[string]any{"edits": edits})
					if err != nil {
						return // killed
					}
					if r.IsError {
						t.Errorf("%s: %+v", mark, r)
						return
					}
					mu.Lock()
					answered[mark] = true
					mu.Unlock()
				}
			})
		}
		for end := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n := len(answered)
			mu.Unlock()
			if n >= 20 {
				break
			}
			if time.Now().After(end) {
				t.Fatal("too few calls answered")
			}
		}
		m.kill()
		wg.Wait()
		left := leftInFlight(ws, state)
		t.Logf("round %d: killed after %d answered calls, leaving %d files in flight", round, len(answered), len(left))
		if len(left) == 0 {
			if round == 5 {
				t.Fatal("no kill left a call in flight")
			}
			continue
		}

		for end := time.Now().Add(10 * time.Second); len(leftInFlight(ws, state)) > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("10s after the kill, still in flight: %v; the sibling's stderr:\n%s", leftInFlight(ws, state), sibling.p.stderr)
			}
		}
		counts := map[string]int{}
		entries, err := os.ReadDir(ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if mark, _, ok := strings.Cut(e.Name(), "-"); ok {
				counts[mark]++
			}
		}
		for mark, n := range counts {
			if n != filesPerCall {
				t.Errorf("call %s: %d of its %d files are there", mark, n, filesPerCall)
			}
		}
		for mark := range answered {
			if counts[mark] != filesPerCall {
				t.Errorf("answered call %s: %d of its %d files are there", mark, counts[mark], filesPerCall)
			}
		}
		break
	}

	out, err := exec.Command(binary, "recover", "--state-dir", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to put back") {
		t.Errorf("wink-mcp recover: %v\n%s", err, out)
	}
}
