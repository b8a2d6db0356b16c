package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/natstest"
	"github.com/wink-mcp/wink-mcp/store"
)

// Replicas: wink-mcp --http processes on one NATS cluster, a 3-node
// cluster of NATS servers run by the test, serve the same sessions. A
// client of the 2026-07-28 era sends each call to the next replica; a
// legacy client whose replica died goes on with its handle on another;
// a change made through one replica is told to the subscribers of another.

// changedElsewhere is the answer to a call whose commit lost to another
// writer's (and that the server did not run again).
const changedElsewhere = "The session changed elsewhere; call again."

// planURI is the planning section's resource.
const planURI = "wink://planning/plan"

// startNATS starts a 3-node NATS cluster for the test, waits until it has
// elected the leaders of the session store's streams, and returns it; its
// URLs are for --store.
func startNATS(t *testing.T) *natstest.Cluster {
	t.Helper()
	nodes, err := natstest.Nodes(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := natstest.Start(nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	st, err := store.Connect(t.Context(), c.URLs(), store.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

// roundRobin is a client of the 2026-07-28 era that sends each call to the
// next of several replicas, and to the one after when a replica does not
// answer. It may be used from several goroutines at once.
type roundRobin struct {
	urls []string
	next atomic.Uint32
}

// call calls tool with args. It reports whether an attempt was cut off in
// flight (its replica broke the connection after taking the request: its
// effect may or may not be kept), and returns an error wrapping
// errNoAnswer when no replica answered.
func (c *roundRobin) call(tool string, args map[string]any) (r result, cut bool, err error) {
	first := int(c.next.Add(1))
	for i := range c.urls {
		hc := &httpClient{url: c.urls[(first+i)%len(c.urls)]}
		var raw json.RawMessage
		raw, err = hc.send("tools/call", tool, map[string]any{"name": tool, "arguments": args, "_meta": modernMeta()})
		if errors.Is(err, errNoAnswer) {
			cut = cut || !errors.Is(err, syscall.ECONNREFUSED)
			continue
		}
		if err == nil {
			err = json.Unmarshal(raw, &r)
		}
		return r, cut, err
	}
	return r, cut, err
}

// retried reports whether a client calls again after the answer r, err:
// no answer, the retryable answer to a commit that lost, or that of a
// store that did not answer in time.
func retried(r result, err error) bool {
	return errors.Is(err, errNoAnswer) || err == nil && r.IsError && (r.text() == changedElsewhere || storeLate(r))
}

// storeLate reports whether r is the answer of a call whose store did not
// answer in time: its change may or may not have landed.
func storeLate(r result) bool { return r.IsError && strings.HasPrefix(r.text(), storeDown) }

// tally records, for concurrent writers, which of their changes were
// acknowledged and which may have been cut off in flight.
type tally struct {
	mu    sync.Mutex
	acked map[string]bool
	cut   map[string]bool
	n     atomic.Int64 // acknowledged
}

func newTally() *tally { return &tally{acked: map[string]bool{}, cut: map[string]bool{}} }

func (w *tally) record(key string, acked, cut bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cut {
		w.cut[key] = true
	}
	if acked {
		w.acked[key] = true
		w.n.Add(1)
	}
}

// maxAttempts bounds the attempts of one change by a writer.
const maxAttempts = 100

// addPlanSteps starts writers goroutines that each add steps steps to the plan
// of session h through c, one call each, called again until acknowledged.
// The returned wait waits for them.
func addPlanSteps(t *testing.T, c *roundRobin, h, prefix string, writers, steps int, w *tally) (wait func()) {
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for k := range steps {
				title := fmt.Sprintf("%s-w%02d-%d", prefix, i, k)
				for attempt := 1; ; attempt++ {
					r, cut, err := c.call("planning_add_step", with(h, map[string]any{"steps": []string{title}}))
					ok := err == nil && !r.IsError
					w.record(title, ok, cut || storeLate(r))
					if ok {
						break
					}
					if !retried(r, err) || attempt == maxAttempts {
						t.Errorf("adding %s, attempt %d: %+v %v", title, attempt, r, err)
						return
					}
				}
			}
		})
	}
	return wg.Wait
}

// planStep matches a step of a rendered plan.
var planStep = regexp.MustCompile(`(?m)^\d+ \[\w+\] (.+)$`)

// checkPlan reads the plan of session h from the replica at url until it
// holds every acknowledged step (the replica may be a moment behind),
// then checks that each step is there once, except one cut off in flight
// and sent again, and that no step is there that no call added.
func checkPlan(t *testing.T, url, h, prefix string, w *tally) {
	t.Helper()
	c := &httpClient{url: url}
	checkSteps(t, url, func() result { return c.call(t, "planning_read_plan", with(h, map[string]any{})) }, prefix, w)
}

// checkSteps is checkPlan with the plan read by read from where.
func checkSteps(t *testing.T, where string, read func() result, prefix string, w *tally) {
	t.Helper()
	url := where
	var steps []string
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := read()
		if r.IsError {
			t.Fatalf("reading the plan from %s: %+v", url, r)
		}
		steps = steps[:0]
		for _, m := range planStep.FindAllStringSubmatch(r.text(), -1) {
			if strings.HasPrefix(m[1], prefix+"-") {
				steps = append(steps, m[1])
			}
		}
		missing := 0
		for title := range w.acked {
			if !slices.Contains(steps, title) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%s: %d of %d acknowledged steps are missing from the plan", url, missing, len(w.acked))
		}
	}
	seen := map[string]bool{}
	for _, title := range steps {
		switch {
		case !w.acked[title] && !w.cut[title]:
			t.Errorf("%s: step %s is in the plan, but no call that added it succeeded", url, title)
		case seen[title] && !w.cut[title]:
			t.Errorf("%s: step %s is in the plan twice", url, title)
		}
		seen[title] = true
	}
	t.Logf("%s: %d steps acknowledged, %d cut off in flight, all in the plan", url, len(w.acked), len(w.cut))
}

// editFiles starts writers goroutines, each with a session of its own,
// that each append edits lines to one of files shared files of the disk
// workspace through c: read_file, then edit_file under read-before-write,
// both again after a retryable answer or a denial because the file
// changed (or, on a replica a moment behind, was not read). It returns the
// acknowledged lines, by file, once they are done.
func editFiles(t *testing.T, c *roundRobin, writers, edits, files int) map[string]*tally {
	byFile := map[string]*tally{}
	for f := range files {
		byFile[fmt.Sprintf("shared%d.txt", f)] = newTally()
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			var h string
			for attempt := 1; h == ""; attempt++ {
				r, _, err := c.call("planning_setup_plan", map[string]any{"objective": fmt.Sprintf("writer %d", i)})
				if err == nil && !r.IsError {
					h, _ = r.StructuredContent["session"].(string)
				} else if !retried(r, err) || attempt == maxAttempts {
					t.Errorf("writer %d: starting a session: %+v %v", i, r, err)
					return
				}
			}
			path := fmt.Sprintf("shared%d.txt", i%files)
			for k := range edits {
				line := fmt.Sprintf("w%02d-%d", i, k)
				for attempt := 1; ; attempt++ {
					if attempt > maxAttempts {
						t.Errorf("%s: not acknowledged after %d attempts", line, maxAttempts)
						return
					}
					r, _, err := c.call("read_file", with(h, map[string]any{"file_path": path}))
					if err != nil || r.IsError {
						if !retried(r, err) {
							t.Errorf("reading %s: %+v %v", path, r, err)
							return
						}
						continue
					}
					r, cut, err := c.call("edit_file", with(h, appendEdit(path, line)))
					ok := err == nil && !r.IsError
					byFile[path].record(line, ok, cut)
					if ok {
						break
					}
					if !retried(r, err) && !strings.Contains(r.text(), "changed since it was last read") && !strings.Contains(r.text(), "must be read before") {
						t.Errorf("editing %s: %+v %v", path, r, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return byFile
}

// events returns the data of the server-sent events of the legacy session
// sid's standalone GET stream at url, until the test ends.
func events(t *testing.T, url, sid string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
	}
	out := make(chan string, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

// TestReplicas runs two replicas on one NATS cluster, sharing a disk
// workspace and its state directory (the locks and journals of its
// files), as two processes on one host.
func TestReplicas(t *testing.T) {
	urls := startNATS(t).URLs()
	ws, state := t.TempDir(), t.TempDir()
	args := []string{"--store", urls, "--workspace", ws, "--state-dir", state}
	a, b := serveHTTP(t, args...), serveHTTP(t, args...)
	rr := &roundRobin{urls: []string{a.url, b.url}}

	// A legacy client of a subscribed to its session's plan is told when
	// a client of b changes the plan by the session's handle, and a then
	// serves the plan as b left it.
	t.Run("notifications", func(t *testing.T) {
		legacy := &httpClient{url: a.url}
		legacy.initialize(t)
		var res struct{ Contents []struct{ Text string } }
		_ = json.Unmarshal(legacy.post(t, "resources/read", "", map[string]any{"uri": "wink://session"}), &res)
		if len(res.Contents) != 1 || res.Contents[0].Text == "" {
			t.Fatalf("wink://session: %+v", res)
		}
		h := res.Contents[0].Text
		legacy.post(t, "resources/subscribe", "", map[string]any{"uri": planURI})
		stream := events(t, a.url, legacy.sid)
		if r := (&httpClient{url: b.url}).call(t, "planning_setup_plan", with(h, map[string]any{"objective": "Set through b"})); r.IsError {
			t.Fatalf("b: %+v", r)
		}
		timeout := time.After(10 * time.Second)
		for told := false; !told; {
			select {
			case data, ok := <-stream:
				if !ok {
					t.Fatal("a's stream ended")
				}
				if data == "" {
					continue
				}
				if !strings.Contains(data, `"notifications/resources/updated"`) || !strings.Contains(data, planURI) {
					t.Fatalf("a's stream: %s, want resources/updated for the plan", data)
				}
				told = true
			case <-timeout:
				t.Fatal("no notification on a's stream after b changed the plan")
			}
		}
		if r := legacy.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "Objective: Set through b") {
			t.Errorf("a after b's change: %+v", r)
		}
	})

	// 64 writers add steps to one session's plan, each call to the next
	// replica: every acknowledged step is in the plan, on each replica.
	t.Run("one session", func(t *testing.T) {
		r, _, err := rr.call("planning_setup_plan", map[string]any{"objective": "Many hands"})
		if err != nil || r.IsError {
			t.Fatalf("setup: %+v %v", r, err)
		}
		h := r.session(t)
		w := newTally()
		addPlanSteps(t, rr, h, "s", 64, 3, w)()
		for _, url := range rr.urls {
			checkPlan(t, url, h, "s", w)
		}
	})

	// 64 writers, each in a session of its own, append lines to 8 files
	// of the shared directory through both replicas: every acknowledged
	// edit is in its file, once, and no other line.
	t.Run("disk files", func(t *testing.T) {
		for f := range 8 {
			if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("shared%d.txt", f)), []byte("END\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		acked := 0
		for path, w := range editFiles(t, rr, 64, 2, 8) {
			lines := fileLines(t, ws, path)
			seen := map[string]bool{}
			for _, l := range lines {
				if !w.acked[l] || seen[l] {
					t.Errorf("%s: line %q is there but was not acknowledged, or is there twice", path, l)
				}
				seen[l] = true
			}
			if len(seen) != len(w.acked) {
				t.Errorf("%s: %d of %d acknowledged edits are there", path, len(seen), len(w.acked))
			}
			acked += len(w.acked)
		}
		t.Logf("%d acknowledged edits, all in their files", acked)
		checkNoTemporaryFiles(t, ws, state)
	})

	// a is killed with SIGKILL while 64 writers add steps to one session:
	// b serves the session on, and a replica started afterwards serves
	// every acknowledged step. A legacy client of a goes on with its
	// session's handle on b.
	t.Run("replica killed", func(t *testing.T) {
		legacy := &httpClient{url: a.url}
		legacy.initialize(t)
		lh := legacy.call(t, "planning_setup_plan", map[string]any{"objective": "Outlive a", "initial_steps": []string{"before"}}).session(t)

		r, _, err := rr.call("planning_setup_plan", map[string]any{"objective": "Under fire"})
		if err != nil || r.IsError {
			t.Fatalf("setup: %+v %v", r, err)
		}
		h := r.session(t)
		w := newTally()
		wait := addPlanSteps(t, rr, h, "k", 64, 3, w)
		for end := time.Now().Add(time.Minute); w.n.Load() < 48; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("too few steps acknowledged")
			}
		}
		a.p.kill()
		t.Logf("a killed after %d steps acknowledged", w.n.Load())

		again := &httpClient{url: b.url}
		again.initialize(t)
		if r := again.call(t, "planning_add_step", with(lh, map[string]any{"steps": []string{"after"}})); r.IsError || !strings.Contains(r.text(), "1 [pending] before\n2 [pending] after") {
			t.Errorf("the legacy client's session on b: %+v", r)
		}

		wait()
		checkPlan(t, b.url, h, "k", w)
		c := serveHTTP(t, args...)
		checkPlan(t, c.url, h, "k", w)
		stopServers(t, b, c)
	})
}
