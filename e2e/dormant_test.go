package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that holds the embedded store stops its server once the store
// has been idle for store_dormancy, releasing the state directory, and
// starts it again on its next call.

// Its debug log lines when it goes dormant and when it wakes.
const (
	dormantLine = `msg="the session store is dormant"`
	wakingLine  = `msg="waking the session store"`
)

// awaitLog waits until the process's stderr holds line n times, for up to
// 10 seconds.
func awaitLog(t *testing.T, p *proc, line string, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); strings.Count(p.stderr.String(), line) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s (%d) in stderr:\n%s", line, n, p.stderr)
		}
	}
}

// callAgain calls tool through c until its session is not changed
// elsewhere meanwhile, and fails the test on any other error.
func callAgain(t *testing.T, c *stdioClient, tool string, args map[string]any) result {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r := c.call(t, tool, args)
		if !r.IsError {
			return r
		}
		if r.text() != changedElsewhere || attempt == maxAttempts {
			t.Fatalf("%s, attempt %d: %+v", tool, attempt, r)
		}
	}
}

// dormantSession returns what starts, initialized, a stdio process of
// session "project" on a new state directory, with a store_dormancy of
// 100 ms and debug logs, and that session's store directory.
func dormantSession(t *testing.T) (run func() *stdioClient, dir string) {
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("store_dormancy: 100ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run = func() *stdioClient {
		c := &stdioClient{p: start(t, "", "--config", cfg, "--log-level", "debug", "--state-dir", state, "--session", "project")}
		c.p.initialize()
		return c
	}
	return run, filepath.Join(state, "store", "stdio-project")
}

// planHas fails the test unless c reads a plan holding each of want; who
// names c in the failure.
func planHas(t *testing.T, who string, c *stdioClient, want ...string) {
	t.Helper()
	r := c.call(t, "planning_read_plan", map[string]any{})
	for _, w := range want {
		if r.IsError || !strings.Contains(r.text(), w) {
			t.Fatalf("%s reads the plan without %q: %+v", who, w, r)
		}
	}
}

// TestDormantHolder: a stdio process on its own state directory, with a
// short store_dormancy, goes dormant once idle and answers its next call
// with the state from before. A second process started while the first
// is dormant takes the directory; then each reads what the other
// commits, the first one included, which had the session in memory from
// before; and so does the first after a third came and went while it was
// dormant. Killed with SIGKILL while dormant, and while waking, the
// process loses nothing: a process started afterwards reads every step
// acknowledged.
func TestDormantHolder(t *testing.T) {
	run, dir := dormantSession(t)

	a := run()
	if r := a.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}); r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	awaitLog(t, a.p, dormantLine, 1)
	start := time.Now()
	planHas(t, "the woken process", a, "Objective: Ship it", "draft")
	t.Logf("the first call after dormancy answered in %v", time.Since(start))
	awaitLog(t, a.p, wakingLine, 1)

	// e comes while a is dormant, takes the directory, commits and goes:
	// a, which wakes when e takes the directory, then takes it over, and
	// reads what e committed.
	awaitLog(t, a.p, dormantLine, 2)
	e := run()
	callAgain(t, e, "planning_add_step", map[string]any{"steps": []string{"from e"}})
	e.p.closeStdin()
	if code := e.p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, e.p.stderr)
	}
	planHas(t, "the process woken after another came and went", a, "draft", "from e")
	if pid := holderPid(t, dir); pid != a.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want %d", pid, a.p.cmd.Process.Pid)
	}

	// b arrives while a is dormant, and takes the directory; a wakes.
	awaitLog(t, a.p, dormantLine, 3)
	b := run()
	if pid := holderPid(t, dir); pid != b.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want the one that arrived, %d", pid, b.p.cmd.Process.Pid)
	}
	planHas(t, "the process that arrived", b, "Objective: Ship it", "draft")
	callAgain(t, b, "planning_add_step", map[string]any{"steps": []string{"from b"}})
	planHas(t, "the woken process", a, "draft", "from b")
	callAgain(t, a, "planning_add_step", map[string]any{"steps": []string{"from a"}})
	planHas(t, "the process that arrived", b, "from b", "from a")
	if pid := holderPid(t, dir); pid != b.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want %d", pid, b.p.cmd.Process.Pid)
	}

	// b goes; a takes the directory over, goes dormant, and is killed.
	b.p.closeStdin()
	if code := b.p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, b.p.stderr)
	}
	checkStderr(t, b.p.stderr.String())
	callAgain(t, a, "planning_add_step", map[string]any{"steps": []string{"after b"}})
	n := strings.Count(a.p.stderr.String(), dormantLine)
	awaitLog(t, a.p, dormantLine, n+1)
	checkStderr(t, a.p.stderr.String())
	a.p.kill()

	// c finds everything; killed as a call wakes it, it loses nothing.
	c := run()
	planHas(t, "a process started after the kill", c, "draft", "from b", "from a", "after b", "from e")
	awaitLog(t, c.p, dormantLine, 1)
	c.id++
	c.p.mustSend(`{"jsonrpc":"2.0","id":` + strconv.Itoa(c.id) + `,"method":"tools/call","params":{"name":"planning_add_step","arguments":{"steps":["unanswered"]}}}`)
	awaitLog(t, c.p, wakingLine, 1)
	c.p.kill()

	d := run()
	planHas(t, "a process started after the kill while waking", d, "draft", "from b", "from a", "after b", "from e")
	d.p.closeStdin()
	if code := d.p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, d.p.stderr)
	}
	checkStderr(t, d.p.stderr.String())
}

// TestDormantHTTPServer: an HTTP server, with a short store_dormancy, goes
// dormant once idle; a request on a handle it minted before answers with
// the session's state, and a second server started while the first is
// dormant takes the directory, continues the handle, and the first reads
// what the second committed.
func TestDormantHTTPServer(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("store_dormancy: 100ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--log-level", "debug", "--state-dir", state}
	a := serveHTTP(t, args...)
	h := (&httpClient{url: a.url}).call(t, "planning_setup_plan", map[string]any{"objective": "Asleep", "initial_steps": []string{"draft"}}).session(t)
	awaitLog(t, a.p, dormantLine, 1)
	if r := (&httpClient{url: a.url}).call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "Objective: Asleep") {
		t.Fatalf("the woken server reads %+v", r)
	}

	awaitLog(t, a.p, dormantLine, 2)
	b := serveHTTP(t, args...)
	if pid := holderPid(t, filepath.Join(state, "store", "http")); pid != b.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want the server that arrived, %d", pid, b.p.cmd.Process.Pid)
	}
	if r := (&httpClient{url: b.url}).call(t, "planning_add_step", with(h, map[string]any{"steps": []string{"from b"}})); r.IsError {
		t.Fatalf("b adds a step: %+v", r)
	}
	if r := (&httpClient{url: a.url}).call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "from b") {
		t.Fatalf("a reads %+v", r)
	}
	stopServers(t, b, a)
}

// awaitReleased waits until the state directory dir has no holder (its
// lock file names no address, which a holder leaves out when it goes
// dormant), for up to 10 seconds, and returns the process id of the
// last holder. A holder goes dormant only when no other process is
// connected to it, and a sibling, awake, is: so both are dormant then.
func awaitReleased(t *testing.T, dir string) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "lock"))
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(string(b), "\n"); len(lines) >= 3 && lines[1] == "" {
			if pid, err := strconv.Atoi(lines[0]); err == nil {
				return pid
			}
		}
		if time.Now().After(end) {
			t.Fatalf("the state directory is still held: lock file %q", b)
		}
	}
}

// TestDormantSiblings: two stdio processes on one session, with a short
// store_dormancy, both go dormant once idle: the sibling closes its
// connection, and the holder, alone then, releases the directory. A call
// through either then sees the other's last commit; a call through the
// former sibling while nobody holds the directory makes it the holder.
// Killed with SIGKILL while dormant, either loses nothing.
func TestDormantSiblings(t *testing.T) {
	run, dir := dormantSession(t)
	byPid := func(pid int, cs ...*stdioClient) (*stdioClient, *stdioClient) {
		t.Helper()
		for i, c := range cs {
			if c.p.cmd.Process.Pid == pid {
				return c, cs[1-i]
			}
		}
		t.Fatalf("the last holder %d is neither process", pid)
		return nil, nil
	}

	a := run()
	if r := a.call(t, "planning_setup_plan", map[string]any{"objective": "Two", "initial_steps": []string{"draft"}}); r.IsError {
		t.Fatalf("setup: %+v", r)
	}
	b := run()
	callAgain(t, b, "planning_add_step", map[string]any{"steps": []string{"from b"}})

	// Both dormant; a call through either sees the other's last commit.
	awaitReleased(t, dir)
	awaitLog(t, a.p, dormantLine, 1)
	awaitLog(t, b.p, dormantLine, 1)
	planHas(t, "a, woken", a, "Objective: Two", "draft", "from b")
	callAgain(t, a, "planning_add_step", map[string]any{"steps": []string{"from a"}})
	planHas(t, "b, woken", b, "from b", "from a")

	// Both dormant again; a call through the former sibling, with nobody
	// holding the directory, makes it the holder.
	holder, sibling := byPid(awaitReleased(t, dir), a, b)
	callAgain(t, sibling, "planning_add_step", map[string]any{"steps": []string{"from the sibling"}})
	if pid := holderPid(t, dir); pid != sibling.p.cmd.Process.Pid {
		t.Fatalf("the store is held by process %d, want the former sibling, %d", pid, sibling.p.cmd.Process.Pid)
	}
	planHas(t, "the former holder", holder, "from a", "from the sibling")

	// Killed while dormant, the last holder loses nothing; nor, then,
	// does the other.
	holder, sibling = byPid(awaitReleased(t, dir), a, b)
	holder.p.kill()
	callAgain(t, sibling, "planning_add_step", map[string]any{"steps": []string{"after the kill"}})
	awaitReleased(t, dir)
	checkStderr(t, sibling.p.stderr.String())
	sibling.p.kill()

	c := run()
	planHas(t, "a process started after the kills", c, "Objective: Two", "draft", "from b", "from a", "from the sibling", "after the kill")
	c.p.closeStdin()
	if code := c.p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.p.stderr)
	}
	checkStderr(t, c.p.stderr.String())
}

// TestSubscriberKeepsAwake: a process whose client is subscribed to a
// resource does not go dormant, so that it hears of another process's
// commits when they are made, after the other has slept and woken; once
// its client unsubscribes, it goes dormant as any other.
func TestSubscriberKeepsAwake(t *testing.T) {
	run, _ := dormantSession(t)
	a := run()
	if f := a.p.call(1000, "resources/subscribe", map[string]any{"uri": planURI}); f.Error != nil {
		t.Fatalf("subscribe: %+v", f.Error)
	}
	b := run()
	mark := len(a.p.out)
	callAgain(t, b, "planning_setup_plan", map[string]any{"objective": "Heard", "initial_steps": []string{"draft"}})
	a.awaitUpdated(t, mark, planURI)

	// b, idle, sleeps; a, subscribed, stays awake and hears b's next
	// commit.
	awaitLog(t, b.p, dormantLine, 1)
	time.Sleep(500 * time.Millisecond) // five times the dormancy
	if strings.Contains(a.p.stderr.String(), dormantLine) {
		t.Fatalf("a process with a subscribed client went dormant:\n%s", a.p.stderr)
	}
	mark = len(a.p.out)
	callAgain(t, b, "planning_add_step", map[string]any{"steps": []string{"after b slept"}})
	a.awaitUpdated(t, mark, planURI)

	// Unsubscribed, a goes dormant too.
	if f := a.p.call(1001, "resources/unsubscribe", map[string]any{"uri": planURI}); f.Error != nil {
		t.Fatalf("unsubscribe: %+v", f.Error)
	}
	awaitLog(t, a.p, dormantLine, 1)
	for _, c := range []*stdioClient{a, b} {
		c.p.closeStdin()
		if code := c.p.wait(); code != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", code, c.p.stderr)
		}
		checkStderr(t, c.p.stderr.String())
	}
}
