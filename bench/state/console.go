package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
	"github.com/wink-mcp/wink-mcp/session"
)

// consoleToken is the bearer token the console command's server takes.
const consoleToken = "bench-console-token"

// bearer adds a bearer token to every request.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+consoleToken)
	return b.next.RoundTrip(r)
}

// consolePages measures the web console of an HTTP server whose store holds
// cfg.n sessions of one principal, each with a plan and a 1 KB file: the
// time to the first byte, and to the last, of the sessions page, and of
// the page of a session whose log holds cfg.calls calls; the median of
// cfg.rounds fetches of each.
func consolePages(ctx context.Context, cfg config, w io.Writer) error {
	tokens := filepath.Join(cfg.dir, "tokens")
	if err := os.WriteFile(tokens, []byte(consoleToken+"\n"), 0o600); err != nil {
		return err
	}
	addr, err := mcpc.FreeAddr()
	if err != nil {
		return err
	}
	p, err := mcpc.Start(ctx, cfg.argv("--http", addr, "--bearer-token-file", tokens, "--max-sessions-per-principal", "0"))
	if err != nil {
		return err
	}
	defer p.Kill()
	if err := p.AwaitListen(ctx, addr); err != nil {
		return err
	}
	hc := &http.Client{Transport: bearer{&http.Transport{MaxIdleConnsPerHost: cfg.conc}}}
	base := "http://" + addr
	if err := p.Explain(openSessions(ctx, hc, base+"/mcp", true, cfg.n, cfg.conc)); err != nil {
		return err
	}
	c := &mcpc.HTTP{Client: hc, URL: base + "/mcp", Modern: true}
	r, err := mcpc.ToolCall(ctx, c, mcpc.Params("planning_setup_plan", json.RawMessage(`{"objective":"many calls"}`), true))
	if err != nil {
		return p.Explain(err)
	}
	h := r.StructuredContent.Session
	args, _ := json.Marshal(map[string]any{"session": h})
	for range cfg.calls {
		if _, err := mcpc.ToolCall(ctx, c, mcpc.Params("planning_read_plan", args, true)); err != nil {
			return p.Explain(err)
		}
	}
	time.Sleep(time.Second) // the call log's last batch is written
	fmt.Fprintf(w, "the console of an HTTP server with %d sessions of one principal, each with a plan and a 1 KB file; median of %d fetches\n", cfg.n+1, cfg.rounds)
	fmt.Fprintf(w, "%-40s  %12s  %12s  %8s\n", "page", "first byte", "whole page", "bytes")
	for _, pg := range []struct{ name, url string }{
		{"sessions (the first 50)", base + "/console"},
		{fmt.Sprintf("a session with %d calls in its log", cfg.calls), base + "/console/s/" + session.LogID(h)},
	} {
		var first, whole []time.Duration
		size := 0
		for range cfg.rounds {
			start := time.Now()
			resp, err := hc.Get(pg.url)
			if err != nil {
				return err
			}
			first = append(first, time.Since(start))
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				return p.Explain(fmt.Errorf("%s: HTTP %d %v", pg.url, resp.StatusCode, err))
			}
			whole = append(whole, time.Since(start))
			size = len(b)
		}
		fmt.Fprintf(w, "%-40s  %12v  %12v  %8d\n", pg.name, median(first).Round(100*time.Microsecond), median(whole).Round(100*time.Microsecond), size)
	}
	return nil
}

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
