package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// warmSessions are the sessions opened before the first measurement, so
// that what every server allocates once is not counted.
const warmSessions = 200

// sessions measures the server memory each of cfg.n HTTP sessions with a
// plan and a 1 KB file takes.
func sessions(ctx context.Context, cfg config, w io.Writer) error {
	addr, err := mcpc.FreeAddr()
	if err != nil {
		return err
	}
	// One client opens every session: the bound on the sessions of one
	// principal is lifted for it.
	p, err := mcpc.Start(ctx, cfg.argv("--http", addr, "--max-sessions-per-principal", "0"))
	if err != nil {
		return err
	}
	defer p.Kill()
	if err := p.AwaitListen(ctx, addr); err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.conc}}
	base := "http://" + addr
	open := func(n int) error {
		err := openSessions(ctx, hc, base+"/mcp", cfg.protocol == "modern", n, cfg.conc)
		return p.Explain(err)
	}
	if err := open(warmSessions); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	rss0, heap0 := p.RSS(), heapInUse(ctx, hc, base)
	t0 := time.Now()
	if err := open(cfg.n); err != nil {
		return err
	}
	took := time.Since(t0)
	time.Sleep(time.Second) // the server's background work settles
	rss1, heap1 := p.RSS(), heapInUse(ctx, hc, base)
	perSession := func(before, after int64) string {
		return fmt.Sprintf("%.1f KiB", float64(after-before)/float64(cfg.n))
	}
	fmt.Fprintf(w, "%d HTTP sessions (%s protocol), each with a plan and a 1 KB file, opened in %v (%.0f sessions/s), after %d more to warm up\n",
		cfg.n, cfg.protocol, took.Round(time.Millisecond), float64(cfg.n)/took.Seconds(), warmSessions)
	fmt.Fprintf(w, "server RSS: %s before, %s after (peak %s): %s per session\n", mib(rss0), mib(rss1), mib(p.PeakRSS()), perSession(rss0, rss1))
	if heap0 > 0 && heap1 > 0 {
		fmt.Fprintf(w, "Go heap in use: %s before, %s after: %s per session\n", mib(heap0), mib(heap1), perSession(heap0, heap1))
	}
	return nil
}

// openSessions opens n sessions at url, c at a time.
func openSessions(ctx context.Context, hc *http.Client, url string, modern bool, n, c int) error {
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range c {
		g.Go(func() error {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := openSession(ctx, &mcpc.HTTP{Client: hc, URL: url, Modern: modern}, i); err != nil {
					return fmt.Errorf("session %d: %w", i, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// openSession opens a session through c, with a plan and a file: over a
// legacy connection, the connection's; otherwise the one the first call
// mints, which the second names.
func openSession(ctx context.Context, c *mcpc.HTTP, i int64) error {
	if !c.Modern {
		if err := mcpc.Initialize(ctx, c); err != nil {
			return err
		}
	}
	plan, _ := json.Marshal(map[string]any{"objective": fmt.Sprint("session ", i), "initial_steps": []string{"read", "write", "check"}})
	r, err := mcpc.ToolCall(ctx, c, mcpc.Params("planning_setup_plan", plan, c.Modern))
	if err != nil {
		return err
	}
	write := map[string]any{"file_path": "notes.md", "content": text(fmt.Sprint("session ", i), 1024)}
	if c.Modern {
		if r.StructuredContent.Session == "" {
			return errors.New("planning_setup_plan named no session")
		}
		write["session"] = r.StructuredContent.Session
	}
	args, _ := json.Marshal(write)
	_, err = mcpc.ToolCall(ctx, c, mcpc.Params("write_file", args, c.Modern))
	return err
}

// heapInUse returns the server's Go heap in use, in KiB, from its
// metrics at base+"/metrics"; 0 if they cannot be read.
func heapInUse(ctx context.Context, hc *http.Client, base string) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int64(f / 1024)
		}
	}
	return 0
}
