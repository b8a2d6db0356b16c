package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One host, many processes: wink-mcp processes on one state directory
// share its store. The first to open it holds it (its lock file names the
// process); when the holder dies, another takes its place.

// holderPid returns the id of the process that holds the store in dir,
// as its lock file says.
func holderPid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("lock file %q: %v", b, err)
	}
	return pid
}

// tryCall is stdioClient.call that reports a process that does not answer
// instead of failing the test, for use from other goroutines.
func (c *stdioClient) tryCall(tool string, args map[string]any) (result, error) {
	c.id++
	params := map[string]any{"name": tool, "arguments": args}
	if c.modern {
		params["_meta"] = modernMeta()
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": "tools/call", "params": params})
	if err != nil {
		return result{}, err
	}
	if err := c.p.send(string(b)); err != nil {
		return result{}, err
	}
	f, ok := c.p.await(strconv.Itoa(c.id))
	var r result
	switch {
	case !ok:
		return r, fmt.Errorf("no answer to %s", tool)
	case f.Error != nil:
		return r, fmt.Errorf("%s: JSON-RPC error %d %s", tool, f.Error.Code, f.Error.Message)
	}
	return r, json.Unmarshal(f.Result, &r)
}

// awaitUpdated reads the process's frames, from the mark-th on, until a
// resources/updated notification for uri, for up to 10 seconds.
func (c *stdioClient) awaitUpdated(t *testing.T, mark int, uri string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for i := mark; ; i++ {
		for i >= len(c.p.out) {
			select {
			case line, ok := <-c.p.lines:
				if !ok {
					t.Fatal("the process ended")
				}
				c.p.out = append(c.p.out, line)
			case <-timeout:
				t.Fatalf("no resources/updated for %s; stderr:\n%s", uri, c.p.stderr)
			}
		}
		if l := string(c.p.out[i]); strings.Contains(l, `"notifications/resources/updated"`) && strings.Contains(l, uri) {
			return
		}
	}
}

// storeDown is the answer to a call whose store did not answer in time.
const storeDown = "Session store unavailable; call again."

// TestOneSessionManyProcesses: three stdio processes started with one
// --session on one state directory serve that session at once, as a
// desktop app and an editor configured alike would. A plan set up through
// one, and a file written through another, are read through the others,
// and a change made through one is told to subscribers of every process.
// Then the holder of the store is killed while the others add steps to
// the plan: they carry on, and a process started afterwards reads every
// step they were told was added.
func TestOneSessionManyProcesses(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "store", "stdio-project")
	clients := make([]*stdioClient, 3)
	for i := range clients {
		c := &stdioClient{p: start(t, "", "--state-dir", state, "--session", "project")}
		c.p.initialize()
		if f := c.p.call(1000, "resources/subscribe", map[string]any{"uri": planURI}); f.Error != nil {
			t.Fatalf("subscribe: %+v", f.Error)
		}
		clients[i] = c
	}
	a, b, c := clients[0], clients[1], clients[2]
	if pid := holderPid(t, dir); pid != a.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want the first, %d", pid, a.p.cmd.Process.Pid)
	}

	marks := []int{len(a.p.out), len(b.p.out), len(c.p.out)}
	if r := b.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}); r.IsError {
		t.Fatalf("setup through b: %+v", r)
	}
	a.awaitUpdated(t, marks[0], planURI)
	c.awaitUpdated(t, marks[2], planURI)
	for i, x := range []*stdioClient{a, c} {
		if r := x.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "Objective: Ship it") {
			t.Errorf("process %d reads %+v", i, r)
		}
	}
	if r := a.call(t, "write_file", map[string]any{"file_path": "notes.md", "content": "from a\n"}); r.IsError {
		t.Fatalf("write through a: %+v", r)
	}
	if r := c.call(t, "read_file", map[string]any{"file_path": "notes.md"}); r.IsError || !strings.Contains(r.text(), "1 | from a") {
		t.Errorf("c reads %+v", r)
	}
	if r := c.call(t, "write_file", map[string]any{"file_path": "notes.md", "content": "from c\n", "overwrite": true}); r.IsError {
		t.Fatalf("write through c: %+v", r)
	}
	if r := a.call(t, "read_file", map[string]any{"file_path": "notes.md"}); r.IsError || !strings.Contains(r.text(), "1 | from c") {
		t.Errorf("a reads %+v", r)
	}
	marks = []int{len(a.p.out), len(b.p.out)}
	if r := c.call(t, "planning_add_step", map[string]any{"steps": []string{"review"}}); r.IsError {
		t.Fatalf("add through c: %+v", r)
	}
	a.awaitUpdated(t, marks[0], planURI)
	b.awaitUpdated(t, marks[1], planURI)

	// b and c add steps while a, the holder, is killed.
	w := newTally()
	var stop atomic.Bool
	var after sync.Map // the first answer after the kill, by writer
	var killed atomic.Int64
	var wg sync.WaitGroup
	for _, x := range []*stdioClient{b, c} {
		name := "b"
		if x == c {
			name = "c"
		}
		wg.Go(func() {
			for k := 0; !stop.Load(); k++ {
				title := fmt.Sprintf("k-%s-%d", name, k)
				for attempt := 1; ; attempt++ {
					r, err := x.tryCall("planning_add_step", map[string]any{"steps": []string{title}})
					if err != nil {
						t.Errorf("%s: %v", title, err)
						return
					}
					ok := !r.IsError
					// A call the store did not answer may have landed.
					down := storeLate(r)
					w.record(title, ok, down)
					if ok {
						if at := killed.Load(); at != 0 {
							after.LoadOrStore(name, time.Duration(time.Now().UnixNano()-at))
						}
						break
					}
					if !down && r.text() != changedElsewhere || attempt == maxAttempts {
						t.Errorf("%s, attempt %d: %+v", title, attempt, r)
						return
					}
				}
			}
		})
	}
	for end := time.Now().Add(time.Minute); w.n.Load() < 20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("too few steps acknowledged")
		}
	}
	killed.Store(time.Now().UnixNano())
	a.p.kill()
	acked := w.n.Load()
	for end := time.Now().Add(30 * time.Second); w.n.Load() < acked+20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after the holder was killed, %d steps acknowledged in 30s", w.n.Load()-acked)
		}
	}
	stop.Store(true)
	wg.Wait()
	after.Range(func(k, v any) bool {
		t.Logf("%s: first step acknowledged %v after the holder was killed", k, v)
		return true
	})
	if pid := holderPid(t, dir); pid != b.p.cmd.Process.Pid && pid != c.p.cmd.Process.Pid {
		t.Errorf("after the kill the store is held by process %d, neither b nor c", pid)
	}

	for _, x := range []*stdioClient{b, c} {
		x.p.closeStdin()
		if code := x.p.wait(); code != 0 {
			t.Errorf("exit code %d; stderr:\n%s", code, x.p.stderr)
		}
		checkStderr(t, x.p.stderr.String())
	}
	fresh := &stdioClient{p: start(t, "", "--state-dir", state, "--session", "project"), modern: true}
	checkSteps(t, "a fresh process", func() result { return fresh.call(t, "planning_read_plan", map[string]any{}) }, "k", w)
	if r := fresh.call(t, "read_file", map[string]any{"file_path": "notes.md"}); r.IsError || !strings.Contains(r.text(), "1 | from c") {
		t.Errorf("a fresh process reads %+v", r)
	}
}

// TestHTTPServersShareStateDir: two --http servers on one state directory
// both serve; a handle minted by one is continued on the other, under
// writers that send each call to the next server; when the holder of the
// store is killed, the other serves on, and a server started afterwards
// serves every acknowledged step.
func TestHTTPServersShareStateDir(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "store", "http")
	args := []string{"--state-dir", state}
	a := serveHTTP(t, args...)
	b := serveHTTP(t, args...)
	if pid := holderPid(t, dir); pid != a.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want the first server, %d", pid, a.p.cmd.Process.Pid)
	}

	h := (&httpClient{url: a.url}).call(t, "planning_setup_plan", map[string]any{"objective": "Two servers", "initial_steps": []string{"draft"}}).session(t)
	if r := (&httpClient{url: b.url}).call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "Objective: Two servers") {
		t.Fatalf("b continues a's handle: %+v", r)
	}

	rr := &roundRobin{urls: []string{a.url, b.url}}
	w := newTally()
	wait := addPlanSteps(t, rr, h, "s", 16, 3, w)
	wait()
	checkPlan(t, a.url, h, "s", w)
	checkPlan(t, b.url, h, "s", w)

	// a, the holder, is killed while 16 writers add steps.
	w = newTally()
	wait = addPlanSteps(t, rr, h, "k", 16, 6, w)
	for end := time.Now().Add(time.Minute); w.n.Load() < 24; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("too few steps acknowledged")
		}
	}
	a.p.kill()
	t.Logf("a killed after %d steps acknowledged", w.n.Load())
	wait()
	checkPlan(t, b.url, h, "k", w)
	if pid := holderPid(t, dir); pid != b.p.cmd.Process.Pid {
		t.Errorf("after the kill the store is held by process %d, want b, %d", pid, b.p.cmd.Process.Pid)
	}
	c := serveHTTP(t, args...)
	checkPlan(t, c.url, h, "k", w)
	stopServers(t, b, c)
}
