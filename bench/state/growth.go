package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// warmWrites are the writes made before the first measurement.
const warmWrites = 20

// growth measures how the RSS of a stdio server grows over cfg.writes
// writes of cfg.size bytes to one file in its session.
func growth(ctx context.Context, cfg config, w io.Writer) error {
	p, c, err := startStdio(ctx, cfg.argv("--session", "bench"))
	if err != nil {
		return err
	}
	defer p.Kill()
	write := func(i int) error {
		args, _ := json.Marshal(map[string]any{"file_path": "big.txt", "overwrite": true, "content": text(fmt.Sprint("write ", i), cfg.size)})
		if _, err := mcpc.ToolCall(ctx, c, mcpc.Params("write_file", args, false)); err != nil {
			return p.Explain(fmt.Errorf("write %d: %w", i, err))
		}
		return nil
	}
	for i := range warmWrites {
		if err := write(-i - 1); err != nil {
			return err
		}
	}
	rss0 := p.RSS()
	fmt.Fprintf(w, "%d writes of %d bytes to one file in one stdio session, after %d to warm up\n", cfg.writes, cfg.size, warmWrites)
	fmt.Fprintf(w, "%8s  %12s\n", "writes", "server RSS")
	fmt.Fprintf(w, "%8d  %12s\n", 0, mib(rss0))
	step := max(cfg.writes/8, 1)
	for i := 1; i <= cfg.writes; i++ {
		if err := write(i); err != nil {
			return err
		}
		if i%step == 0 || i == cfg.writes {
			fmt.Fprintf(w, "%8d  %12s\n", i, mib(p.RSS()))
		}
	}
	fmt.Fprintf(w, "RSS growth: %s (peak RSS %s)\n", mib(p.RSS()-rss0), mib(p.PeakRSS()))
	return nil
}
