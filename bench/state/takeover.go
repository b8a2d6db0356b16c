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

// takeover measures, cfg.rounds times, how long the other processes on a
// state directory go without an answer when the one that holds its store
// is killed: two stdio processes with one --session on a fresh state
// directory, the first holding the store; calls are made through the
// second until the first is killed with SIGKILL, and the time from the
// kill to the second's next answered call (each call changes the plan;
// one cut off by the kill is made again) is the round's figure.
func takeover(ctx context.Context, cfg config, w io.Writer) error {
	var took []time.Duration
	for round := range cfg.rounds {
		d, err := takeoverRound(ctx, cfg, filepath.Join(cfg.dir, fmt.Sprint("round-", round)))
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		took = append(took, d)
	}
	slices.Sort(took)
	fmt.Fprintf(w, "kill -9 of the holder to the next answered call through another process, %d rounds\n", cfg.rounds)
	fmt.Fprintf(w, "median %v, min %v, max %v\n", took[len(took)/2].Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	return nil
}

// takeoverRound runs one round of takeover on the state directory dir.
func takeoverRound(ctx context.Context, cfg config, dir string) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	cfg.dir = dir
	holder, hc, err := startStdio(ctx, cfg.argv("--session", "bench"))
	if err != nil {
		return 0, err
	}
	defer holder.Kill()
	other, oc, err := startStdio(ctx, cfg.argv("--session", "bench"))
	if err != nil {
		return 0, err
	}
	defer other.Kill()
	n := 0
	call := func(c mcpc.Client) error {
		n++
		args, _ := json.Marshal(map[string]any{"objective": fmt.Sprint("takeover ", n), "initial_steps": []string{"a"}})
		_, err := mcpc.ToolCall(ctx, c, mcpc.Params("planning_setup_plan", args, false))
		return err
	}
	// The holder answers first, so that it holds the store; then the
	// other warms up.
	if err := call(hc); err != nil {
		return 0, holder.Explain(err)
	}
	for range 50 {
		if err := call(oc); err != nil {
			return 0, other.Explain(err)
		}
	}
	killed := time.Now()
	holder.Kill()
	<-holder.Exited()
	for {
		err := call(oc)
		if err == nil {
			return time.Since(killed), nil
		}
		if time.Since(killed) > 30*time.Second {
			return 0, other.Explain(fmt.Errorf("no answered call 30s after the kill: %w", err))
		}
	}
}
