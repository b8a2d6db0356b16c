package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// perCallTools are the calls percall measures, in the order it makes them.
var perCallTools = []string{"write_file", "read_file", "edit_file", "planning_update_step", "rm"}

// percall measures what one call costs a session that holds cfg.files
// files (see the package doc): the server's CPU and the bytes it writes
// per call, for each of perCallTools, cfg.calls calls each: write_file
// writes new 1 KB files among the others, which read_file reads,
// edit_file edits and rm removes.
//
// With cfg.against >= 0, a second server holds a session of that many
// files beside the first, and the two take turns of cfg.turn calls of
// each tool, A then B, then B then A; the report gives each side's CPU
// per call over all its turns and their ratio, which is the figure to
// hold against a target such as "at most 1.5 times the same call in an
// empty session", and the ratio turn by turn (median and quartiles),
// which says how much the turns differ.
// Restarts alternate the same way.
func percall(ctx context.Context, cfg config, w io.Writer) error {
	sizes := []int{cfg.files}
	if cfg.against >= 0 {
		sizes = []int{cfg.against, cfg.files}
	}
	var sides []*side
	for i, n := range sizes {
		c := cfg
		c.files = n
		if len(sizes) > 1 {
			c.dir = filepath.Join(cfg.dir, fmt.Sprint("side", i))
		}
		s, err := newSide(ctx, c)
		if sides = append(sides, s); err != nil {
			for _, s := range sides {
				s.kill()
			}
			return err
		}
	}
	defer func() {
		for _, s := range sides {
			s.kill()
		}
	}()
	where := "in memory"
	switch {
	case cfg.disk:
		where = "a disk workspace, each file read once"
	case cfg.stored:
		where = "in memory, --session (embedded store)"
	}
	for _, s := range sides {
		fmt.Fprintf(w, "%d files (%s), %s; set up in %v\n", s.cfg.files, cfg.layout, where, s.setup.Round(time.Millisecond))
	}
	if len(sides) == 1 {
		fmt.Fprintf(w, "%-22s %12s %14s\n", "call", "CPU/call", "written/call")
	} else {
		fmt.Fprintf(w, "%d turns of %d calls; CPU/call at %d files, at %d files; the ratio of the two, over all turns, then turn by turn: median [quartiles]\n", (cfg.calls+cfg.turn-1)/cfg.turn, cfg.turn, sides[0].cfg.files, sides[1].cfg.files)
	}
	for _, tool := range perCallTools {
		// Three calls first, so that what a tool does once is not in
		// the figure.
		for _, s := range sides {
			for i := -3; i < 0; i++ {
				if err := s.run(tool, i); err != nil {
					return err
				}
			}
		}
		if len(sides) == 1 {
			s := sides[0]
			cpu0, bytes0 := s.p.CPUTime(), s.p.Written()
			for i := range cfg.calls {
				if err := s.run(tool, i); err != nil {
					return err
				}
			}
			cpu, bytes := s.p.CPUTime()-cpu0, s.p.Written()-bytes0
			fmt.Fprintf(w, "%-22s %9d µs %12d B\n", tool, cpu.Microseconds()/int64(cfg.calls), bytes/int64(cfg.calls))
			continue
		}
		var cpu [2]time.Duration
		var ratios []float64
		for t, first := 0, 0; first < cfg.calls; t, first = t+1, first+cfg.turn {
			n := min(cfg.turn, cfg.calls-first)
			var turn [2]time.Duration
			for k := range 2 {
				at := (t + k) % 2 // A then B, then B then A
				s := sides[at]
				cpu0 := s.p.CPUTime()
				for i := first; i < first+n; i++ {
					if err := s.run(tool, i); err != nil {
						return err
					}
				}
				turn[at] = s.p.CPUTime() - cpu0
				cpu[at] += turn[at]
			}
			if turn[0] > 0 {
				ratios = append(ratios, float64(turn[1])/float64(turn[0]))
			}
		}
		fmt.Fprintf(w, "%-22s %9d µs %9d µs  %5.2f  %s\n", tool, cpu[0].Microseconds()/int64(cfg.calls), cpu[1].Microseconds()/int64(cfg.calls), float64(cpu[1])/float64(cpu[0]), quartiles(ratios))
	}
	// The file the first call after a restart reads, at every N.
	for _, s := range sides {
		if err := s.call("write_file", map[string]any{"file_path": "resume.txt", "content": "resumed\n"}); err != nil {
			return err
		}
		// Stopped, not killed: a --cpu-profile is written on the way out.
		if err := s.p.Stop(10 * time.Second); err != nil {
			return err
		}
	}
	if !cfg.stored {
		return nil
	}
	answers := make([][]time.Duration, len(sides))
	for r := range cfg.restarts {
		for k := range sides {
			at := (r + k) % len(sides)
			_, answer, err := resume(ctx, sides[at].argv, "resume.txt", 1)
			if err != nil {
				return err
			}
			answers[at] = append(answers[at], answer)
		}
	}
	for i, s := range sides {
		slices.Sort(answers[i])
		fmt.Fprintf(w, "resuming %d files after a restart (median of %d): %v to the answer to the first call (read_file)\n", s.cfg.files, cfg.restarts, ms(answers[i][len(answers[i])/2]))
	}
	if len(sides) > 1 {
		var ratios []float64
		for r := range answers[0] {
			ratios = append(ratios, float64(answers[1][r])/float64(answers[0][r]))
		}
		fmt.Fprintf(w, "resuming, ratio by restart: %s\n", quartiles(ratios))
	}
	return nil
}

// side is a server of percall, with the session it built.
type side struct {
	ctx   context.Context
	cfg   config
	argv  []string
	p     *mcpc.Process
	c     *mcpc.Stdio
	setup time.Duration
}

// newSide starts a server of cfg and builds its session of cfg.files
// files. On failure no process is left running.
func newSide(ctx context.Context, cfg config) (*side, error) {
	s := &side{ctx: ctx, cfg: cfg}
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return s, err
	}
	args := []string{}
	if cfg.stored {
		args = append(args, "--session", "bench")
	}
	root := ""
	if cfg.disk {
		root = filepath.Join(cfg.dir, "ws")
		if err := os.MkdirAll(root, 0o755); err != nil {
			return s, err
		}
		args = append(args, "--workspace", root)
		for i := range cfg.files {
			p := filepath.Join(root, s.path(i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return s, err
			}
			if err := os.WriteFile(p, []byte(s.body(i)), 0o644); err != nil {
				return s, err
			}
		}
	}
	s.argv = cfg.argv(args...)
	var err error
	if s.p, s.c, err = startStdio(ctx, s.argv); err != nil {
		return s, err
	}
	t0 := time.Now()
	const batch = 100
	for first := 0; first < cfg.files; first += batch {
		last := min(first+batch, cfg.files)
		if cfg.disk {
			for at := first; at < last; at += 20 {
				var paths []string
				for i := at; i < min(at+20, last); i++ {
					paths = append(paths, s.path(i))
				}
				if err := s.call("read_multiple_files", map[string]any{"paths": paths}); err != nil {
					return s, err
				}
			}
			continue
		}
		var edits []map[string]any
		for i := first; i < last; i++ {
			edits = append(edits, map[string]any{"op": "write", "file_path": s.path(i), "content": s.body(i)})
		}
		if err := s.call("apply_edits", map[string]any{"edits": edits}); err != nil {
			return s, err
		}
	}
	steps := []string{"one", "two", "three"}
	if err := s.call("planning_setup_plan", map[string]any{"objective": "measure", "initial_steps": steps}); err != nil {
		return s, err
	}
	s.setup = time.Since(t0)
	return s, nil
}

// path is where the session's i-th file is.
func (s *side) path(i int) string {
	if s.cfg.layout == "flat" {
		return fmt.Sprintf("flat/f%06d.txt", i)
	}
	return fmt.Sprintf("d%04d/f%06d.txt", i/100, i)
}

// body is the content of the session's i-th file.
func (s *side) body(i int) string { return text(fmt.Sprint("file ", i), 100) }

// newPath is where the i-th measured write_file puts its new file: among
// the files, in the one directory or spread over the many.
func (s *side) newPath(i int) string {
	if s.cfg.layout == "flat" {
		return fmt.Sprintf("flat/new%05d.txt", i)
	}
	return fmt.Sprintf("d%04d/new%05d.txt", i%max(s.cfg.files/100, 1), i)
}

// call calls tool with args a, and fails on an error result.
func (s *side) call(tool string, a any) error {
	b, _ := json.Marshal(a)
	if _, err := mcpc.ToolCall(s.ctx, s.c, mcpc.Params(tool, b, false)); err != nil {
		return s.p.Explain(fmt.Errorf("%s: %w", tool, err))
	}
	return nil
}

// run makes the i-th measured call of tool (i < 0: a warm-up call).
func (s *side) run(tool string, i int) error {
	k := i + 3 // 0, 1, 2 are the warm-up calls
	switch tool {
	case "read_file":
		return s.call("read_file", map[string]any{"file_path": s.newPath(k)})
	case "planning_update_step":
		return s.call("planning_update_step", map[string]any{"step_id": 1 + k%3, "title": fmt.Sprintf("step %d", k)})
	case "write_file":
		return s.call("write_file", map[string]any{"file_path": s.newPath(k), "content": text(fmt.Sprint("new ", k), 1024)})
	case "edit_file":
		// Edits the files the measured writes made, which exist at
		// every N.
		return s.call("edit_file", map[string]any{"file_path": s.newPath(k), "old_string": fmt.Sprintf("new %d line 0 ", k), "new_string": fmt.Sprintf("edited %d line 0 ", k)})
	default:
		return s.call("rm", map[string]any{"path": s.newPath(k)})
	}
}

// kill stops the side's server, if it started.
func (s *side) kill() {
	if s.p != nil {
		s.p.Kill()
	}
}

// quartiles formats the median of xs, with its first and third
// quartiles in brackets.
func quartiles(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	slices.Sort(xs)
	q := func(f float64) float64 { return xs[int(f*float64(len(xs)-1)+0.5)] }
	return fmt.Sprintf("%.2f [%.2f-%.2f]", q(0.5), q(0.25), q(0.75))
}
