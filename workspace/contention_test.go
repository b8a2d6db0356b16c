package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/tools"
)

// staleRead is the start of the read-before-write policy's denial of a
// write to a file that changed since the session read it.
const staleRead = "changed since it was last read"

// appendArgs is an edit that puts line before the file's END marker.
func appendArgs(path, line string) string {
	return fmt.Sprintf(`{"file_path":%q,"old_string":"END\n","new_string":%q}`, path, line+"\nEND\n")
}

// TestContendedEditsAreNeverLost: 32 sessions append lines to one disk
// file with edit_file. With read-before-write on, each reads the file
// first and retries when the policy says it changed since; with the policy
// off, each edit must succeed. Every acknowledged edit is in the file at
// the end, once, and nothing else is. Without one lock from the policy's
// check through the tool's read to its write, sessions that read the same
// version overwrite each other's lines.
func TestContendedEditsAreNeverLost(t *testing.T) {
	for _, c := range []struct {
		name     string
		off      bool
		attempts int
	}{
		{"read-before-write", false, 30},
		{"no policy", true, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, backends[1], map[string]string{"shared.txt": "END\n"}, harnessOpts{opts: Options{NoReadBeforeWrite: c.off}})
			const sessions = 32
			var acked sync.Map
			var n, denied atomic.Int64
			var wg sync.WaitGroup
			for i := range sessions {
				cs := h.client(fmt.Sprintf("s%d", i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					for k := range c.attempts {
						if !c.off {
							if text, isErr := h.callAs(ctx, cs, "read_file", `{"file_path":"shared.txt"}`); isErr {
								t.Errorf("read_file: %s", text)
								return
							}
						}
						line := fmt.Sprintf("s%d-%d", i, k)
						text, isErr := h.callAs(ctx, cs, "edit_file", appendArgs("shared.txt", line))
						switch {
						case !isErr:
							acked.Store(line, true)
							n.Add(1)
						case !c.off && strings.Contains(text, staleRead):
							denied.Add(1)
						default:
							t.Errorf("edit_file: %s", text)
							return
						}
					}
				}()
			}
			wg.Wait()
			data, err := os.ReadFile(filepath.Join(h.dir, "shared.txt"))
			if err != nil {
				t.Fatal(err)
			}
			lines := splitLines(string(data))
			seen := map[string]bool{}
			for _, l := range lines[:len(lines)-1] {
				if _, ok := acked.Load(l); !ok || seen[l] {
					t.Errorf("line %q is in the file but was not acknowledged, or is there twice", l)
				}
				seen[l] = true
			}
			if got := int64(len(seen)); got != n.Load() || lines[len(lines)-1] != "END" {
				t.Errorf("%d of %d acknowledged edits are in the file", got, n.Load())
			}
			t.Logf("%d acknowledged edits, %d in the file; %d denied as stale and retried", n.Load(), len(seen), denied.Load())
			checkClean(t, h)
		})
	}
}

// TestFailedCallsLeaveNothingOnContendedFiles: 16 sessions run apply_edits
// over pairs of 8 shared files, taken in random order, while a third of
// the calls fail on a last operation after changing both files. At the
// end each file holds exactly the lines of the calls that succeeded, each
// in both its files: no failed call's line is anywhere (a restore never
// puts back a state that hides another call's committed write, and never
// leaves its own), no call is there by half, and no two calls deadlocked.
func TestFailedCallsLeaveNothingOnContendedFiles(t *testing.T) {
	const nfiles, sessions, attempts = 8, 16, 12
	files := map[string]string{}
	for i := range nfiles {
		files[fmt.Sprintf("f%d.txt", i)] = "END\n"
	}
	h := newHarness(t, backends[1], files)
	type call struct{ a, b string }
	var mu sync.Mutex
	acked := map[string]call{}
	var failed, denied atomic.Int64
	var wg sync.WaitGroup
	for i := range sessions {
		cs := h.client(fmt.Sprintf("s%d", i))
		rng := rand.New(rand.NewPCG(uint64(i), 14))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for k := range attempts {
				perm := rng.Perm(nfiles)
				a, b := fmt.Sprintf("f%d.txt", perm[0]), fmt.Sprintf("f%d.txt", perm[1])
				for _, p := range []string{a, b} {
					if text, isErr := h.callAs(ctx, cs, "read_file", fmt.Sprintf(`{"file_path":%q}`, p)); isErr {
						t.Errorf("read_file: %s", text)
						return
					}
				}
				fails := k%3 == 2
				line := fmt.Sprintf("ok-s%d-%d", i, k)
				if fails {
					line = fmt.Sprintf("fail-s%d-%d", i, k)
				}
				edits := []map[string]any{
					{"op": "edit", "file_path": a, "old_string": "END\n", "new_string": line + "\nEND\n"},
					{"op": "edit", "file_path": b, "old_string": "END\n", "new_string": line + "\nEND\n"},
				}
				if fails {
					edits = append(edits, map[string]any{"op": "edit", "file_path": a, "old_string": "no such text", "new_string": "x"})
				}
				args, _ := json.Marshal(map[string]any{"edits": edits})
				text, isErr := h.callAs(ctx, cs, "apply_edits", string(args))
				switch {
				case !isErr && !fails:
					mu.Lock()
					acked[line] = call{a, b}
					mu.Unlock()
				case isErr && strings.Contains(text, staleRead):
					denied.Add(1)
				case isErr && fails && strings.Contains(text, "old_string not found"):
					failed.Add(1)
				default:
					t.Errorf("apply_edits %s: (isError=%v) %s", args, isErr, text)
					return
				}
			}
		}()
	}
	wg.Wait()
	found := map[string][]string{}
	for i := range nfiles {
		p := fmt.Sprintf("f%d.txt", i)
		data, err := os.ReadFile(filepath.Join(h.dir, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range splitLines(string(data)) {
			if l != "END" {
				found[l] = append(found[l], p)
			}
		}
	}
	for line, files := range found {
		c, ok := acked[line]
		if !ok {
			t.Errorf("%q is in %v but its call was not acknowledged", line, files)
			continue
		}
		if len(files) != 2 || !(files[0] == c.a && files[1] == c.b || files[0] == c.b && files[1] == c.a) {
			t.Errorf("%q is in %v, want %s and %s once each", line, files, c.a, c.b)
		}
	}
	for line := range acked {
		if _, ok := found[line]; !ok {
			t.Errorf("acknowledged %q is in no file", line)
		}
	}
	t.Logf("%d acknowledged calls, %d failed on purpose, %d denied as stale", len(acked), failed.Load(), denied.Load())
	checkClean(t, h)
}

// TestLockWaitEndsAtTheDeadline: a call that waits for a file another call
// holds gives up at its deadline with a clear error, and changes nothing:
// in the read-before-write check, or in the tool when the policy is off.
func TestLockWaitEndsAtTheDeadline(t *testing.T) {
	const busy = "File 'a.txt' is being changed by another call; try again."
	for _, c := range []struct {
		name string
		off  bool
		want string
	}{
		{"in the policy's check", false, busy},
		{"in the tool", true, "Tool 'edit_file' exceeded its deadline (300ms). " + busy},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, backends[1], map[string]string{"a.txt": "END\n"}, harnessOpts{deadline: 300 * time.Millisecond, opts: Options{NoReadBeforeWrite: c.off}})
			holder, waiter := h.client("holder"), h.client("waiter")
			for _, cs := range []*mcptest.Client{holder, waiter} {
				h.callAs(context.Background(), cs, "read_file", `{"file_path":"a.txt"}`)
			}
			holding, release := make(chan struct{}), make(chan struct{})
			prev := editHook
			defer func() { editHook = prev }()
			editHook = func(ctx *tools.Context, i int) error {
				if i == 1 {
					close(holding)
					<-release
				}
				return nil
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				args := `{"edits":[{"op":"edit","file_path":"a.txt","old_string":"END","new_string":"first\nEND"},{"op":"write","file_path":"b.txt","content":"b"}]}`
				if text, isErr := h.callAs(context.Background(), holder, "apply_edits", args); !isErr || !strings.Contains(text, "exceeded its deadline") {
					t.Errorf("the holder, kept past its deadline: (isError=%v) %s", isErr, text)
				}
			}()
			<-holding
			if text, isErr := h.callAs(context.Background(), waiter, "edit_file", appendArgs("a.txt", "second")); !isErr || text != c.want {
				t.Errorf("the waiter: (isError=%v) %q, want %q", isErr, text, c.want)
			}
			close(release)
			<-done
			if data, _ := os.ReadFile(filepath.Join(h.dir, "a.txt")); string(data) != "END\n" {
				t.Errorf("a.txt = %q, want it as it was", data)
			}
			checkClean(t, h)
		})
	}
}

// TestLocksBeforeHeldOnesAreNotWaitedFor: a call that holds the lock of b
// and asks for a, which another call holds, fails at once instead of
// waiting: waiting for a lock that comes before one held is how two calls
// deadlock.
func TestLocksBeforeHeldOnesAreNotWaitedFor(t *testing.T) {
	b, _ := backends[1].open(t, nil)
	one, _ := b.impl.open()
	two, _ := b.impl.open()
	ctx := context.Background()
	if _, err := one.lock(ctx, "one", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := two.lock(ctx, "two", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := two.lock(ctx, "two", []string{"a"})
	if be, ok := err.(*busyError); !ok || be.path != "a" || time.Since(start) > time.Second {
		t.Errorf("lock a while holding b = %v after %v, want a busyError at once", err, time.Since(start))
	}
	one.(*diskStore).end(one.(*diskStore).c)
	if _, err := two.lock(ctx, "two", []string{"a"}); err != nil {
		t.Errorf("lock a once free: %v", err)
	}
	two.(*diskStore).end(two.(*diskStore).c)
}

// checkClean checks that the workspace holds no temporary file and its
// state directory no journal or lock: nothing is in flight.
func checkClean(t *testing.T, h *harness) {
	t.Helper()
	_ = filepath.WalkDir(h.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	state := h.b.impl.(*diskBackend).state
	entries, _ := os.ReadDir(state)
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == rootFile })
	if len(entries) > 0 {
		t.Errorf("the state directory %s holds %d files, want none", state, len(entries))
	}
}
