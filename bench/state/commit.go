package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// filesPerCall is how many files one apply_edits call writes to build the
// workspace.
const filesPerCall = 100

// commit measures the bytes one 1 KB write adds to the store of a session
// whose workspace has cfg.files files, and how long the session takes to
// resume after a restart.
func commit(ctx context.Context, cfg config, w io.Writer) error {
	argv := cfg.argv("--session", "bench")
	p, c, err := startStdio(ctx, argv)
	if err != nil {
		return err
	}
	defer p.Kill()
	call := func(tool string, args any) error {
		b, _ := json.Marshal(args)
		_, err := mcpc.ToolCall(ctx, c, mcpc.Params(tool, b, false))
		return p.Explain(err)
	}
	t0 := time.Now()
	for first := 0; first < cfg.files; first += filesPerCall {
		var edits []map[string]any
		for i := first; i < min(first+filesPerCall, cfg.files); i++ {
			edits = append(edits, map[string]any{"op": "write", "file_path": fmt.Sprintf("d%03d/f%05d.txt", i/100, i), "content": text(fmt.Sprint("file ", i), 1024)})
		}
		if err := call("apply_edits", map[string]any{"edits": edits}); err != nil {
			return fmt.Errorf("building the workspace: %w", err)
		}
	}
	fmt.Fprintf(w, "a workspace of %d files of 1 KB in %d directories, built in %v with %d calls of apply_edits; store directory: %s\n",
		cfg.files, (cfg.files+99)/100, time.Since(t0).Round(time.Millisecond), (cfg.files+filesPerCall-1)/filesPerCall, kib(dirSize(cfg.dir)))
	var written []int64
	last := ""
	for k := range cfg.commits {
		before := dirSize(cfg.dir)
		last = fmt.Sprintf("new/n%03d.txt", k)
		if err := call("write_file", map[string]any{"file_path": last, "content": text(fmt.Sprint("new ", k), 1024)}); err != nil {
			return err
		}
		written = append(written, dirSize(cfg.dir)-before)
	}
	slices.Sort(written)
	fmt.Fprintf(w, "one write of a new 1 KB file: the store's directory grows by %s (median of %d; %s to %s)\n",
		kib(written[len(written)/2]), len(written), kib(written[0]), kib(written[len(written)-1]))
	if err := p.Stop(10 * time.Second); err != nil {
		return err
	}

	toInit, toAnswer, err := resume(ctx, argv, last, cfg.restarts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "resuming the session after a restart (median of %d): %v from process start to the answer to initialize, %v to the answer to its first call (read_file)\n",
		cfg.restarts, ms(toInit), ms(toAnswer))
	return nil
}

// resume starts the stdio server argv restarts times, one after the
// other, and returns the medians of the time from process start to the
// answer to initialize and to the answer to a read_file of path.
func resume(ctx context.Context, argv []string, path string, restarts int) (toInit, toAnswer time.Duration, err error) {
	var inits, answers []time.Duration
	for range restarts {
		p, c, err := mcpc.StartStdio(ctx, argv)
		if err != nil {
			return 0, 0, err
		}
		err = mcpc.Initialize(ctx, c)
		inits = append(inits, p.Since())
		if err == nil {
			args, _ := json.Marshal(map[string]any{"file_path": path})
			_, err = mcpc.ToolCall(ctx, c, mcpc.Params("read_file", args, false))
			answers = append(answers, p.Since())
		}
		if err != nil {
			p.Kill()
			return 0, 0, p.Explain(fmt.Errorf("resuming: %w", err))
		}
		if err := p.Stop(10 * time.Second); err != nil {
			return 0, 0, err
		}
	}
	slices.Sort(inits)
	slices.Sort(answers)
	return inits[len(inits)/2], answers[len(answers)/2], nil
}

// dirSize returns the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// kib formats bytes as KiB.
func kib(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/1024) }

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
