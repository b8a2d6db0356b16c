package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Sessions under SIGKILL, over the built binary with the embedded store:
// writers make calls that change state while the server is killed at a
// random moment, again and again, each time restarted on the same state
// directory. After each restart every call that was answered with success
// is there, no call is there in part, a call answered with an error left
// nothing, and a call that got no answer is either all there or all
// absent.
//
// Each call of a writer leaves marks that can be read back, named after the
// writer and the call's number, so that a call that changes two things
// shows whether it is there whole: two plan steps added together, or a new
// file written together with a line added to the writer's log. Reading
// back uses grep and planning_read_plan, which the read_before_write policy
// does not count as reads, so that the writers' next edits, allowed only
// on files their session knows at their current content, also prove that
// the policy's memory was stored with the files it describes.

// crashKind is what a writer's call does.
type crashKind int

const (
	// addSteps adds two plan steps in one call.
	addSteps crashKind = iota
	// editTwo writes a new file and adds a line to the writer's log in
	// one apply_edits.
	editTwo
	// overwrite replaces the writer's file last.txt, which its session
	// knows (read_before_write).
	overwrite
	// failEdits writes a new file and then fails in the same apply_edits:
	// it must leave nothing.
	failEdits
)

func (k crashKind) String() string {
	return [...]string{"add_steps", "edit_two", "overwrite", "fail_edits"}[k]
}

// crashFate is what a writer knows of one of its calls.
type crashFate int

const (
	unanswered crashFate = iota // all there or all absent
	there                       // answered with success, or found whole
	absent                      // answered with an error, or not found
)

func (f crashFate) String() string { return [...]string{"unanswered", "there", "absent"}[f] }

// crashCall is one call a writer made.
type crashCall struct {
	n    int
	kind crashKind
	fate crashFate
}

// crashWriter makes calls one after another in one session, and keeps
// what it knows of them.
type crashWriter struct {
	name   string // prefix of everything it writes: its directory, titles, lines
	handle string // the session it passes, or "" for the connection's own
	rng    *rand.Rand
	calls  []*crashCall
	last   int // the call whose content last.txt holds, or -1
}

// tryCaller calls a tool. Its error wraps errNoAnswer when the process went
// away before it answered.
type tryCaller interface {
	try(tool string, args map[string]any) (result, error)
}

func (c *httpClient) try(tool string, args map[string]any) (result, error) {
	var r result
	raw, err := c.send("tools/call", tool, map[string]any{"name": tool, "arguments": args, "_meta": modernMeta()})
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	return r, err
}

// stdioMux calls tools over a process's stdio from many goroutines at
// once, with raw frames of the 2026-07-28 era, routing each response to
// its caller by id. It alone reads the process's stdout.
type stdioMux struct {
	p       *proc
	write   sync.Mutex // one request on stdin at a time
	mu      sync.Mutex
	id      int
	waiting map[string]chan frame
	eof     chan struct{} // closed when stdout ends
}

func newStdioMux(p *proc) *stdioMux {
	m := &stdioMux{p: p, waiting: map[string]chan frame{}, eof: make(chan struct{})}
	go func() {
		defer close(m.eof)
		for {
			f, ok := p.await("")
			if !ok {
				return
			}
			id := compactJSON(f.ID)
			m.mu.Lock()
			ch := m.waiting[id]
			delete(m.waiting, id)
			m.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		}
	}()
	return m
}

func (m *stdioMux) try(tool string, args map[string]any) (result, error) {
	ch := make(chan frame, 1)
	m.mu.Lock()
	m.id++
	id := m.id
	m.waiting[strconv.Itoa(id)] = ch
	m.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": modernMeta()}})
	if err != nil {
		return result{}, err
	}
	m.write.Lock()
	err = m.p.send(string(b))
	m.write.Unlock()
	if err != nil {
		return result{}, fmt.Errorf("%s: %w: %v", tool, errNoAnswer, err)
	}
	var f frame
	select {
	case f = <-ch:
	case <-m.eof:
		select {
		case f = <-ch: // it came just before the end
		default:
			return result{}, fmt.Errorf("%s: %w: stdout ended", tool, errNoAnswer)
		}
	}
	if f.Error != nil {
		return result{}, fmt.Errorf("%s: JSON-RPC error %d %s", tool, f.Error.Code, f.Error.Message)
	}
	var r result
	return r, json.Unmarshal(f.Result, &r)
}

// kill ends the process with SIGKILL and waits for it and for the end of
// its stdout.
func (m *stdioMux) kill() {
	_ = m.p.cmd.Process.Kill()
	<-m.eof
	_ = m.p.cmd.Wait()
	m.p.exited = true
	m.p.cancel()
}

// must calls a tool that has to answer with success.
func must(t *testing.T, c tryCaller, tool string, args map[string]any) result {
	t.Helper()
	r, err := c.try(tool, args)
	if err != nil || r.IsError {
		t.Fatalf("%s %v: %v %+v", tool, args, err, r)
	}
	return r
}

// structured decodes the structured content of r into v.
func structured(t *testing.T, r result, v any) {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("structured content %v: %v", r.StructuredContent, err)
	}
}

func newCrashWriter(name, handle string, seed uint64) *crashWriter {
	return &crashWriter{name: name, handle: handle, rng: rand.New(rand.NewPCG(seed, 3)), last: -1}
}

// args returns args with the writer's session, if it names one.
func (w *crashWriter) args(args map[string]any) map[string]any {
	if w.handle == "" {
		return args
	}
	return with(w.handle, args)
}

// mark is the text of call n: a step title's stem, a log line, a file's
// content.
func (w *crashWriter) mark(n int) string { return fmt.Sprintf("%s-%d", w.name, n) }

// file is the path of the file call n writes.
func (w *crashWriter) file(n int) string {
	if w.calls[n].kind == failEdits {
		return fmt.Sprintf("%s/fail-%d.txt", w.name, n)
	}
	return fmt.Sprintf("%s/%d.txt", w.name, n)
}

// start creates the writer's log, with nothing in it but END.
func (w *crashWriter) start(t *testing.T, c tryCaller) {
	t.Helper()
	must(t, c, "write_file", w.args(map[string]any{"file_path": w.name + "/log", "content": "END\n"}))
}

// run makes calls until one gets no answer, calling answered after each
// answer.
func (w *crashWriter) run(t *testing.T, c tryCaller, answered func()) {
	for {
		call := &crashCall{n: len(w.calls), kind: crashKind(w.rng.IntN(4))}
		w.calls = append(w.calls, call)
		tool, args := w.request(call)
		r, err := c.try(tool, w.args(args))
		switch {
		case errors.Is(err, errNoAnswer):
			return
		case err != nil:
			t.Errorf("%s %s: %v", w.name, tool, err)
			call.fate = absent
		case r.IsError:
			if call.kind != failEdits {
				t.Errorf("%s %s %v: %+v", w.name, tool, args, r)
			}
			call.fate = absent
		default:
			if call.kind == failEdits {
				t.Errorf("%s %s %v succeeded: %+v", w.name, tool, args, r)
			}
			call.fate = there
			if call.kind == overwrite {
				w.last = call.n
			}
		}
		answered()
	}
}

// request returns the tool and arguments of call.
func (w *crashWriter) request(call *crashCall) (string, map[string]any) {
	m := w.mark(call.n)
	switch call.kind {
	case addSteps:
		return "planning_add_step", map[string]any{"steps": []string{m + "-a", m + "-b"}}
	case editTwo:
		return "apply_edits", map[string]any{"edits": []map[string]any{
			{"op": "write", "file_path": w.file(call.n), "content": m + "\n"},
			{"op": "edit", "file_path": w.name + "/log", "old_string": "END\n", "new_string": m + "\nEND\n"},
		}}
	case overwrite:
		return "write_file", map[string]any{"file_path": w.name + "/last.txt", "content": m + "\n", "overwrite": true}
	default:
		return "apply_edits", map[string]any{"edits": []map[string]any{
			{"op": "write", "file_path": w.file(call.n), "content": "fail\n"},
			{"op": "edit", "file_path": w.name + "/log", "old_string": "NOT THERE", "new_string": m},
		}}
	}
}

// crashTally counts the unanswered calls of a round, and those of them
// found whole.
type crashTally struct{ unanswered, found int }

// verify reads back the session of writers (all in one session) and
// checks every call of every writer against what it left; an unanswered
// call becomes there or absent, as found. It returns how long the first
// answer took from since.
func verify(t *testing.T, c tryCaller, writers []*crashWriter, since time.Time) (time.Duration, crashTally) {
	t.Helper()
	args := writers[0].args
	var plan struct {
		Steps []struct {
			ID    int    `json:"step_id"`
			Title string `json:"title"`
		} `json:"steps"`
	}
	structured(t, must(t, c, "planning_read_plan", args(map[string]any{})), &plan)
	resumed := time.Since(since)
	steps := map[string]int{}
	for _, s := range plan.Steps {
		if _, dup := steps[s.Title]; dup {
			t.Errorf("step %q is in the plan twice", s.Title)
		}
		steps[s.Title] = s.ID
	}
	var tally crashTally
	for _, w := range writers {
		var found struct {
			Matches []struct {
				Path string `json:"path"`
				Text string `json:"text"`
			} `json:"matches"`
			Truncated bool `json:"truncated"`
		}
		structured(t, must(t, c, "grep", args(map[string]any{"pattern": ".", "path": w.name})), &found)
		if found.Truncated {
			t.Fatalf("%s: grep capped; the test writes too much", w.name)
		}
		files := map[string][]string{}
		for _, m := range found.Matches {
			files[m.Path] = append(files[m.Path], m.Text)
		}
		w.check(t, steps, files, &tally)
	}
	return resumed, tally
}

// check compares the calls of w with the steps of the plan (by title) and
// the lines of the files under its directory, and settles the unanswered
// ones.
func (w *crashWriter) check(t *testing.T, steps map[string]int, files map[string][]string, tally *crashTally) {
	t.Helper()
	log := files[w.name+"/log"]
	if len(log) == 0 || log[len(log)-1] != "END" {
		t.Errorf("%s/log does not end with END: %q", w.name, log)
	}
	logged := map[string]bool{}
	for _, line := range log {
		if logged[line] {
			t.Errorf("%s/log holds %q twice", w.name, line)
		}
		logged[line] = true
	}
	expected := map[string]bool{w.name + "/log": true, w.name + "/last.txt": true}
	lines := map[string]bool{"END": true}
	titles := 0
	for _, call := range w.calls {
		m := w.mark(call.n)
		var whole, part bool
		switch call.kind {
		case addSteps:
			a, okA := steps[m+"-a"]
			b, okB := steps[m+"-b"]
			whole, part = okA && okB && b == a+1, okA || okB
			if okA && okB {
				titles += 2
			}
		case editTwo:
			content, written := files[w.file(call.n)]
			if written && !slices.Equal(content, []string{m}) {
				t.Errorf("%s holds %q, want %q", w.file(call.n), content, m)
			}
			whole, part = written && logged[m], written || logged[m]
			expected[w.file(call.n)], lines[m] = true, true
		case failEdits:
			_, part = files[w.file(call.n)]
		case overwrite:
			continue // below
		}
		switch {
		case part && !whole:
			t.Errorf("%s, call %d (%v, %v): partly there", w.name, call.n, call.kind, call.fate)
		case call.fate == there && !whole:
			t.Errorf("%s, call %d (%v): answered with success, not there after the restart", w.name, call.n, call.kind)
		case call.fate == absent && part:
			t.Errorf("%s, call %d (%v): answered with an error, there after the restart", w.name, call.n, call.kind)
		}
		tally.count(call, whole)
	}
	w.checkLast(t, files[w.name+"/last.txt"], tally)
	for path := range files {
		if !expected[path] {
			t.Errorf("%s: no call wrote it whole, or no call at all", path)
		}
	}
	for line := range logged {
		if !lines[line] {
			t.Errorf("%s/log: line %q written by no call", w.name, line)
		}
	}
	n := 0
	for title := range steps {
		if strings.HasPrefix(title, w.name+"-") {
			n++
		}
	}
	if n != titles {
		t.Errorf("%s: %d steps in the plan, %d of them added whole by its calls", w.name, n, titles)
	}
}

// checkLast checks last.txt: it holds the content of the last overwrite
// answered with success (none before the first), or of an unanswered one
// after it.
func (w *crashWriter) checkLast(t *testing.T, content []string, tally *crashTally) {
	t.Helper()
	holds := -1
	for _, call := range w.calls {
		if call.kind == overwrite && slices.Equal(content, []string{w.mark(call.n)}) {
			holds = call.n
		}
	}
	if content != nil && holds < 0 {
		t.Errorf("%s/last.txt holds %q, written by no call", w.name, content)
	}
	ok := holds == w.last
	for _, call := range w.calls {
		if call.kind == overwrite && call.fate == unanswered {
			ok = ok || holds == call.n
			tally.count(call, holds == call.n)
		}
	}
	if !ok {
		t.Errorf("%s/last.txt holds %q; the last overwrite answered with success was call %d", w.name, content, w.last)
	}
	w.last = max(w.last, holds)
}

// count settles call, if it was unanswered, as there when found whole and
// absent otherwise, and counts it.
func (tt *crashTally) count(call *crashCall, whole bool) {
	if call.fate != unanswered {
		return
	}
	tt.unanswered++
	call.fate = absent
	if whole {
		tt.found++
		call.fate = there
	}
}

// load runs writers against c until each got no answer: the process is
// killed once they have had answers to calls in all, so that what a round
// writes does not depend on the machine's speed, and the writers are still
// at work when it dies.
func load(t *testing.T, c tryCaller, writers []*crashWriter, calls int, kill func()) {
	t.Helper()
	var n atomic.Int64
	reached, stopped := make(chan struct{}), make(chan struct{})
	answered := func() {
		if n.Add(1) == int64(calls) {
			close(reached)
		}
	}
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Go(func() { w.run(t, c, answered) })
	}
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-reached:
	case <-stopped:
		t.Errorf("the writers lost their answers after %d calls, before the kill", n.Load())
	}
	kill()
	<-stopped
}

// TestKillUnderLoad: an HTTP server serving 2026-07-28 clients in several
// sessions by handle, and a stdio process with --session, each killed
// with SIGKILL several times under load and restarted on the same state
// directory: every call answered with success is there, none is there in
// part, and none answered with an error left anything. The time from the
// start of the restarted process to the first answer in the resumed
// session is logged.
func TestKillUnderLoad(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	t.Run("http", func(t *testing.T) { killHTTP(t, seed, 6, 8, 4) })
	t.Run("stdio", func(t *testing.T) { killStdio(t, seed, 4, 4) })
}

// killHTTP runs rounds of load on an HTTP server, sessions of writers
// each, killing and restarting the server every round.
func killHTTP(t *testing.T, seed uint64, rounds, sessions, writers int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	args := []string{"--state-dir", t.TempDir(), "--store", "embedded"}
	s := serveHTTP(t, args...)
	c := &httpClient{url: s.url}
	all := make([][]*crashWriter, sessions)
	var flat []*crashWriter
	for i := range all {
		h := must(t, c, "planning_setup_plan", map[string]any{"objective": fmt.Sprintf("session %d", i)}).session(t)
		for j := range writers {
			w := newCrashWriter(fmt.Sprintf("s%dw%d", i, j), h, seed+uint64(i*writers+j))
			w.start(t, c)
			all[i] = append(all[i], w)
			flat = append(flat, w)
		}
	}
	for round := 1; round <= rounds; round++ {
		calls := 50 + rng.IntN(450)
		load(t, c, flat, calls, s.p.kill)
		if t.Failed() {
			t.Fatalf("stderr of the killed server:\n%s", s.p.stderr)
		}
		began := time.Now()
		s = serveHTTP(t, args...)
		listening := time.Since(began)
		c = &httpClient{url: s.url}
		var total crashTally
		var first time.Duration
		for i, ws := range all {
			d, tally := verify(t, c, ws, began)
			if i == 0 {
				first = d
			}
			total.unanswered += tally.unanswered
			total.found += tally.found
		}
		t.Logf("round %d: killed after %d answers, with %d unanswered (%d found whole after the restart); restart: listening after %v, first answer in a resumed session after %v",
			round, calls, total.unanswered, total.found, listening.Round(time.Millisecond), first.Round(time.Millisecond))
		if t.Failed() {
			t.Fatalf("stderr of the restarted server:\n%s", s.p.stderr)
		}
	}
}

// killStdio runs rounds of load on a stdio process with --session, with
// writers in its session, killing and restarting it every round.
func killStdio(t *testing.T, seed uint64, rounds, writers int) {
	rng := rand.New(rand.NewPCG(seed, 2))
	args := []string{"--session", "desk", "--state-dir", t.TempDir(), "--store", "embedded"}
	m := newStdioMux(start(t, "", args...))
	must(t, m, "planning_setup_plan", map[string]any{"objective": "desk"})
	var ws []*crashWriter
	for j := range writers {
		w := newCrashWriter(fmt.Sprintf("w%d", j), "", seed+uint64(j))
		w.start(t, m)
		ws = append(ws, w)
	}
	for round := 1; round <= rounds; round++ {
		calls := 20 + rng.IntN(280)
		load(t, m, ws, calls, m.kill)
		if t.Failed() {
			t.Fatalf("stderr of the killed process:\n%s", m.p.stderr)
		}
		began := time.Now()
		m = newStdioMux(start(t, "", args...))
		first, tally := verify(t, m, ws, began)
		t.Logf("round %d: killed after %d answers, with %d unanswered (%d found whole after the restart); restart: first answer in the resumed session after %v",
			round, calls, tally.unanswered, tally.found, first.Round(time.Millisecond))
		if t.Failed() {
			t.Fatalf("stderr of the restarted process:\n%s", m.p.stderr)
		}
	}
	m.p.closeStdin()
	<-m.eof
	if code := m.p.wait(); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, m.p.stderr)
	}
	checkFrames(t, m.p.out)
}
