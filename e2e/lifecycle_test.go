package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// toolResult is the part of a tools/call result the Go tests look at.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool `json:"isError"`
	StructuredContent *struct {
		Objective string `json:"objective"`
		Status    string `json:"status"`
		Steps     []struct {
			ID     int    `json:"step_id"`
			Title  string `json:"title"`
			Status string `json:"status"`
		} `json:"steps"`
	} `json:"structuredContent"`
}

func decodeToolResult(t testing.TB, f frame) toolResult {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("JSON-RPC error %d: %s", f.Error.Code, f.Error.Message)
	}
	var r toolResult
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatalf("decoding a tools/call result: %v\n%s", err, f.Result)
	}
	if len(r.Content) == 0 || r.Content[0].Type != "text" {
		t.Fatalf("result without a leading text block: %s", f.Result)
	}
	return r
}

func callTool(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// TestShutdown checks the three ways a stdio server is asked to stop: end
// of input, SIGTERM and SIGINT. Each ends with exit code 0 after the
// responses to the calls made.
func TestShutdown(t *testing.T) {
	t.Run("stdin_eof", func(t *testing.T) {
		t.Parallel()
		p := start(t, "")
		p.initialize()
		// Close the input right behind two calls, without waiting for them:
		// in-flight calls finish and are answered before the exit. (They may
		// run in either order, so neither depends on the other.)
		p.mustSend(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"Stop cleanly","initial_steps":["a","b"]}}}`)
		p.mustSend(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"planning_setup_plan","arguments":{"objective":"Or this one"}}}`)
		p.closeStdin()
		var got []string
		for {
			f, ok := p.await("")
			if !ok {
				break
			}
			r := decodeToolResult(t, f)
			if r.IsError {
				t.Errorf("call %s failed: %s", f.ID, r.Content[0].Text)
			}
			got = append(got, compactJSON(f.ID))
		}
		slices.Sort(got)
		if want := []string{"1", "2"}; !slices.Equal(got, want) {
			t.Errorf("answered ids %v, want %v", got, want)
		}
		if code := p.wait(); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
		}
		checkFrames(t, p.out)
		checkStderr(t, p.stderr.String())
	})
	t.Run("stdin_eof_many_in_flight", func(t *testing.T) {
		t.Parallel()
		const calls = 100
		p := start(t, "")
		p.initialize()
		p.call(1, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": "Drain"}))
		// Write every call and end the input at once: all are answered.
		written := writeAddSteps(p, calls, true)
		added := readAddSteps(t, p, -1)
		if err := <-written; err != nil {
			t.Fatalf("writing the calls: %v", err)
		}
		if len(added) != calls {
			t.Errorf("%d of %d calls answered", len(added), calls)
		}
		checkContiguous(t, added, 1)
		if code := p.wait(); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
		}
		checkFrames(t, p.out)
		checkStderr(t, p.stderr.String())
	})
	t.Run("sigterm_calls_in_flight", func(t *testing.T) {
		t.Parallel()
		const calls = 200
		p := start(t, "")
		p.initialize()
		p.call(1, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": "Stop midway"}))
		written := writeAddSteps(p, calls, false)
		// Once the first call is answered, more are queued or running.
		first := readAddSteps(t, p, 1)
		p.signal(syscall.SIGTERM)
		// Calls the server took are finished and answered, each committed
		// whole; calls it had not read yet get no answer.
		rest := readAddSteps(t, p, -1)
		for k, v := range first {
			rest[k] = v
		}
		checkContiguous(t, rest, 1)
		if code := p.wait(); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
		}
		<-written // fails with a broken pipe once the server is gone; that is expected
		checkFrames(t, p.out)
		checkStderr(t, p.stderr.String())
	})
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(strings.ToLower(fmt.Sprint(sig)), func(t *testing.T) {
			t.Parallel()
			p := start(t, "")
			// The initialize response proves the server is serving, so its
			// signal handler is installed.
			p.initialize()
			r := decodeToolResult(t, p.call(1, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": "Idle"})))
			if r.IsError {
				t.Fatalf("setup failed: %s", r.Content[0].Text)
			}
			// Idle, with stdin still open: the signal alone stops the server.
			p.signal(sig)
			if code := p.wait(); code != 0 {
				t.Errorf("exit code %d after %v, want 0; stderr:\n%s", code, sig, p.stderr)
			}
			checkFrames(t, p.out)
			checkStderr(t, p.stderr.String())
		})
	}
}

// TestStdoutOnlyFrames makes many calls of every kind with debug logging on
// and checks that stdout carries JSON-RPC frames only and the logs go to
// stderr, in the text and the JSON log format.
func TestStdoutOnlyFrames(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			p := start(t, "", "--log-level", "debug", "--log-format", format)
			p.initialize()
			id, toolCalls := 0, 0
			next := func() int { id++; return id }
			tool := func(name string, args any) {
				toolCalls++
				p.call(next(), "tools/call", callTool(name, args))
			}
			tool("planning_read_plan", map[string]any{}) // no plan yet
			tool("planning_setup_plan", map[string]any{"objective": "Log a lot", "initial_steps": []string{"one"}})
			for i := range 20 {
				tool("planning_add_step", map[string]any{"steps": []string{fmt.Sprintf("step %d", i)}})
				tool("planning_update_step", map[string]any{"step_id": i + 1, "status": "in_progress"})
				tool("planning_update_step", map[string]any{"step_id": "x"})            // schema failure
				tool("planning_add_step", map[string]any{"steps": []string{"ok", " "}}) // handler failure
				tool("planning_read_plan", map[string]any{})
				p.call(next(), "tools/call", callTool("no_such_tool", map[string]any{}))
				p.call(next(), "resources/read", map[string]any{"uri": "wink://session/log"})
				p.call(next(), "prompts/get", map[string]any{"name": "planning"})
				p.call(next(), "no/such/method", nil)
				p.mustSend(`{"jsonrpc":"2.0","id":` + fmt.Sprint(next()) + `,"method":"ping"`) // malformed
				if _, ok := p.await(""); !ok {
					t.Fatalf("no response to a malformed line; stderr:\n%s", p.stderr)
				}
			}
			p.closeStdin()
			if code := p.wait(); code != 0 {
				t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
			}
			if len(p.out) < id {
				t.Errorf("%d stdout lines for %d requests", len(p.out), id)
			}
			checkFrames(t, p.out)
			stderr := p.stderr.String()
			checkStderr(t, stderr)
			debug := 0
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Contains(line, " level=DEBUG ") || strings.Contains(line, `"level":"DEBUG"`) {
					debug++
				}
			}
			if debug < toolCalls {
				t.Errorf("%d debug log lines on stderr for %d tool calls; stderr:\n%s", debug, toolCalls, stderr)
			}
		})
	}
}

// TestConcurrentCallsOneSession writes 200 planning_add_step calls at once
// on one session. They are serialised: all succeed, each adds exactly one
// step, and the final plan has ids 1..N without gaps or duplicates.
func TestConcurrentCallsOneSession(t *testing.T) {
	const initial, calls = 2, 200
	p := start(t, "")
	p.initialize()
	r := decodeToolResult(t, p.call(1, "tools/call", callTool("planning_setup_plan", map[string]any{
		"objective": "Many hands", "initial_steps": []string{"first", "second"},
	})))
	if r.IsError {
		t.Fatalf("setup failed: %s", r.Content[0].Text)
	}

	written := writeAddSteps(p, calls, false)
	added := readAddSteps(t, p, calls)
	if err := <-written; err != nil {
		t.Fatalf("writing the batch: %v", err)
	}
	checkContiguous(t, added, initial+1)

	r = decodeToolResult(t, p.call(2, "tools/call", callTool("planning_read_plan", map[string]any{})))
	if r.IsError {
		t.Fatalf("read failed: %s", r.Content[0].Text)
	}
	steps := r.StructuredContent.Steps
	if len(steps) != initial+calls {
		t.Errorf("the plan has %d steps, want %d", len(steps), initial+calls)
	}
	titles := map[string]bool{}
	for i, s := range steps {
		if s.ID != i+1 {
			t.Errorf("step %d has id %d, want %d", i, s.ID, i+1)
		}
		if titles[s.Title] {
			t.Errorf("title %q appears twice", s.Title)
		}
		titles[s.Title] = true
	}
	for i := range calls {
		if title := fmt.Sprintf("call %d", i); !titles[title] {
			t.Errorf("step %q is missing", title)
		}
	}
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
	}
	checkFrames(t, p.out)
	checkStderr(t, p.stderr.String())
}

// writeAddSteps writes n planning_add_step calls (ids 1000 on, each adding
// "call i") in one write, closing stdin after them when closeAfter is set.
// The channel receives the write's error.
func writeAddSteps(p *proc, n int, closeAfter bool) <-chan error {
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"planning_add_step","arguments":{"steps":["call %d"]}}}`+"\n", 1000+i, i)
	}
	written := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write([]byte(batch.String()))
		if closeAfter {
			p.closeStdin()
		}
		written <- err
	}()
	return written
}

// readAddSteps reads n responses to writeAddSteps calls (all of them, to
// EOF, when n < 0), checks each added exactly its own step, and returns the
// step ids added, each mapped to its request id.
func readAddSteps(t *testing.T, p *proc, n int) map[int]int {
	t.Helper()
	added := map[int]int{}
	answered := map[string]bool{}
	for n < 0 || len(answered) < n {
		f, ok := p.await("")
		if !ok {
			if n >= 0 {
				t.Fatalf("stdout closed after %d responses; stderr:\n%s", len(answered), p.stderr)
			}
			break
		}
		id := compactJSON(f.ID)
		if answered[id] {
			t.Errorf("request %s answered twice", id)
		}
		answered[id] = true
		r := decodeToolResult(t, f)
		if r.IsError || !strings.HasPrefix(r.Content[0].Text, "Added 1 step.") || r.StructuredContent == nil {
			t.Errorf("request %s: isError=%v %q", id, r.IsError, r.Content[0].Text)
			continue
		}
		steps := r.StructuredContent.Steps
		last := steps[len(steps)-1]
		if want := fmt.Sprintf("call %d", mustAtoi(t, id)-1000); last.Title != want {
			t.Errorf("request %s: last step is %q, want %q (another call's step interleaved)", id, last.Title, want)
		}
		if len(steps) != last.ID {
			t.Errorf("request %s: %d steps but the last has id %d", id, len(steps), last.ID)
		}
		if prev, dup := added[last.ID]; dup {
			t.Errorf("step id %d added by requests %d and %s", last.ID, prev, id)
		}
		added[last.ID] = mustAtoi(t, id)
	}
	return added
}

// checkContiguous checks that the added step ids are from, from+1, ...
// without gaps.
func checkContiguous(t *testing.T, added map[int]int, from int) {
	t.Helper()
	for id := from; id < from+len(added); id++ {
		if _, ok := added[id]; !ok {
			t.Errorf("step ids of the answered calls have a gap at %d (%d answered)", id, len(added))
			return
		}
	}
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not an integer id: %s", s)
	}
	return n
}
