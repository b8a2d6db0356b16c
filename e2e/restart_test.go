package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatal(err)
	}
	p.drain()
	_ = p.cmd.Wait()
	p.exited = true
	p.cancel()
}

// TestSessionSurvivesKill: a stdio process that names its session keeps a
// plan and a file of the memory workspace in the embedded store; killed
// with SIGKILL and started again with the same flags, it reads them back.
// With --store memory nothing survives.
func TestSessionSurvivesKill(t *testing.T) {
	for _, tc := range []struct {
		store string
		kept  bool
	}{
		{"embedded", true},
		{"memory", false},
	} {
		t.Run("store="+tc.store, func(t *testing.T) {
			args := []string{"--session", "desk", "--state-dir", t.TempDir(), "--store", tc.store}
			p := start(t, "", args...)
			keepState(t, &stdioClient{p: p, modern: true}, true)
			p.kill()

			c := &stdioClient{p: start(t, "", args...), modern: true}
			plan := c.call(t, "planning_read_plan", map[string]any{})
			file := c.call(t, "read_file", map[string]any{"file_path": "notes.md"})
			if !tc.kept {
				if !plan.IsError || !file.IsError {
					t.Errorf("with --store memory, after the restart: plan %+v, file %+v", plan, file)
				}
				return
			}
			if plan.IsError || !strings.Contains(plan.text(), "1 [in_progress] draft\n2 [pending] review") {
				t.Errorf("the plan after the restart: %+v", plan)
			}
			if file.IsError || !strings.Contains(file.text(), "1 | bye") {
				t.Errorf("the file after the restart: %+v", file)
			}
		})
	}
}

// TestHandleSurvivesRestartOverHTTP: a 2026-07-28 client's session, named
// by the handle its first call returned, is served by the next process on
// the same state directory.
func TestHandleSurvivesRestartOverHTTP(t *testing.T) {
	state := t.TempDir()
	s := serveHTTP(t, "--state-dir", state, "--store", "embedded")
	h := keepState(t, &httpClient{url: s.url}, false)
	s.p.kill()

	s = serveHTTP(t, "--state-dir", state, "--store", "embedded")
	c := &httpClient{url: s.url}
	if r := c.call(t, "planning_read_plan", with(h, map[string]any{})); r.IsError || !strings.Contains(r.text(), "Objective: Ship it") {
		t.Errorf("the plan after the restart: %+v", r)
	}
	if r := c.call(t, "read_file", with(h, map[string]any{"file_path": "notes.md"})); r.IsError || !strings.Contains(r.text(), "1 | bye") {
		t.Errorf("the file after the restart: %+v", r)
	}
}

// TestStdioProcessesShareStateDir: stdio processes with --store embedded
// on one state directory each get a store of their own, named after their
// --session, and one without --session keeps its fresh session in memory;
// all serve at once. A second process with the same --session serves the
// same session.
func TestStdioProcessesShareStateDir(t *testing.T) {
	state := t.TempDir()
	args := func(more ...string) []string {
		return append([]string{"--state-dir", state, "--store", "embedded"}, more...)
	}
	var clients []*stdioClient
	for _, a := range [][]string{args("--session", "a"), args("--session", "b"), args()} {
		clients = append(clients, &stdioClient{p: start(t, "", a...), modern: true})
	}
	for i, c := range clients {
		if r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}); r.IsError {
			t.Errorf("process %d: %+v; stderr:\n%s", i, r, c.p.stderr)
		}
	}
	entries, err := os.ReadDir(filepath.Join(state, "store"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "stdio-a stdio-b" {
		t.Errorf("stores under %s: %q, want stdio-a and stdio-b", state, names)
	}

	again := &stdioClient{p: start(t, "", args("--session", "a")...), modern: true}
	if r := again.call(t, "planning_read_plan", map[string]any{}); r.IsError || !strings.Contains(r.text(), "Objective: Ship it") {
		t.Errorf("a second process with --session a: %+v; stderr:\n%s", r, again.p.stderr)
	}
}
