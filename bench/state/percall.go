package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// perCallTools are the calls percall measures, in the order it makes them.
var perCallTools = []string{"write_file", "read_file", "edit_file", "planning_update_step", "rm"}

// percall measures what one call costs a session that holds cfg.files
// files: the server's CPU per call (from /proc, the server alone) and the
// bytes it writes per call (wchar: with --stored, mostly the store's
// files; also its answers and log), for each of
// perCallTools, cfg.calls calls each: write_file writes new 1 KB files
// among the others, which read_file reads, edit_file edits and rm
// removes. The files are laid out by
// cfg.layout: "flat", all in one directory, or "dirs", in directories of
// 100. With --disk the workspace is a directory on disk holding the files,
// each read once (read_multiple_files) before the measurement.
func percall(ctx context.Context, cfg config, w io.Writer) error {
	args := []string{}
	if cfg.stored {
		args = append(args, "--session", "bench")
	}
	root := ""
	if cfg.disk {
		root = filepath.Join(cfg.dir, "ws")
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		args = append(args, "--workspace", root)
	}
	path := func(i int) string {
		if cfg.layout == "flat" {
			return fmt.Sprintf("flat/f%06d.txt", i)
		}
		return fmt.Sprintf("d%04d/f%06d.txt", i/100, i)
	}
	// newPath is where the i-th measured write_file puts its new file:
	// among the files, in the one directory or spread over the many.
	newPath := func(i int) string {
		if cfg.layout == "flat" {
			return fmt.Sprintf("flat/new%05d.txt", i)
		}
		return fmt.Sprintf("d%04d/new%05d.txt", i%max(cfg.files/100, 1), i)
	}
	body := func(i int) string { return text(fmt.Sprint("file ", i), 100) }
	if cfg.disk {
		for i := range cfg.files {
			p := filepath.Join(root, path(i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(body(i)), 0o644); err != nil {
				return err
			}
		}
	}
	p, c, err := startStdio(ctx, cfg.argv(args...))
	if err != nil {
		return err
	}
	defer p.Kill()
	call := func(tool string, a any) error {
		b, _ := json.Marshal(a)
		_, err := mcpc.ToolCall(ctx, c, mcpc.Params(tool, b, false))
		if err != nil {
			return p.Explain(fmt.Errorf("%s: %w", tool, err))
		}
		return nil
	}
	t0 := time.Now()
	const batch = 100
	for first := 0; first < cfg.files; first += batch {
		last := min(first+batch, cfg.files)
		if cfg.disk {
			for at := first; at < last; at += 20 {
				var paths []string
				for i := at; i < min(at+20, last); i++ {
					paths = append(paths, path(i))
				}
				if err := call("read_multiple_files", map[string]any{"paths": paths}); err != nil {
					return err
				}
			}
			continue
		}
		var edits []map[string]any
		for i := first; i < last; i++ {
			edits = append(edits, map[string]any{"op": "write", "file_path": path(i), "content": body(i)})
		}
		if err := call("apply_edits", map[string]any{"edits": edits}); err != nil {
			return err
		}
	}
	steps := []string{"one", "two", "three"}
	if err := call("planning_setup_plan", map[string]any{"objective": "measure", "initial_steps": steps}); err != nil {
		return err
	}
	where := "in memory"
	switch {
	case cfg.disk:
		where = "a disk workspace, each file read once"
	case cfg.stored:
		where = "in memory, --session (embedded store)"
	}
	fmt.Fprintf(w, "%d files (%s), %s; set up in %v\n", cfg.files, cfg.layout, where, time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(w, "%-22s %12s %14s\n", "call", "CPU/call", "written/call")
	for _, tool := range perCallTools {
		// Three calls first, so that what a tool does once is not in
		// the figure.
		run := func(i int) error {
			k := i + 3 // 0, 1, 2 are the warm-up calls
			switch tool {
			case "read_file":
				return call("read_file", map[string]any{"file_path": newPath(k)})
			case "planning_update_step":
				return call("planning_update_step", map[string]any{"step_id": 1 + k%3, "title": fmt.Sprintf("step %d", k)})
			case "write_file":
				return call("write_file", map[string]any{"file_path": newPath(k), "content": text(fmt.Sprint("new ", k), 1024)})
			case "edit_file":
				// Edits the files the measured writes made, which
				// exist at every N.
				return call("edit_file", map[string]any{"file_path": newPath(k), "old_string": fmt.Sprintf("new %d line 0 ", k), "new_string": fmt.Sprintf("edited %d line 0 ", k)})
			default:
				return call("rm", map[string]any{"path": newPath(k)})
			}
		}
		for i := -3; i < 0; i++ {
			if err := run(i); err != nil {
				return err
			}
		}
		cpu0, bytes0 := p.CPUTime(), p.Written()
		for i := range cfg.calls {
			if err := run(i); err != nil {
				return err
			}
		}
		cpu, bytes := p.CPUTime()-cpu0, p.Written()-bytes0
		fmt.Fprintf(w, "%-22s %9d µs %12d B\n", tool, cpu.Microseconds()/int64(cfg.calls), bytes/int64(cfg.calls))
	}
	// The file the first call after a restart reads, at every N.
	if err := call("write_file", map[string]any{"file_path": "resume.txt", "content": "resumed\n"}); err != nil {
		return err
	}
	// Stopped, not killed: a --cpu-profile is written on the way out.
	if err := p.Stop(10 * time.Second); err != nil || !cfg.stored {
		return err
	}
	toInit, toAnswer, err := resume(ctx, cfg.argv(args...), "resume.txt", cfg.restarts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "resuming after a restart (median of %d): %v to the answer to initialize, %v to the answer to the first call (read_file)\n", cfg.restarts, ms(toInit), ms(toAnswer))
	return nil
}
