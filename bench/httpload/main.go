// Command httpload measures wink-mcp over Streamable HTTP against a bare
// mcp-go Streamable HTTP server (bench/bare --http) in the same run, as
// ratios:
//
//	httpload --wink "bin/wink-mcp" --bare "bin/bare" --sessions 64 --calls 200 --rounds 3
//
// It starts both servers on free loopback ports. In each round, each side
// opens --sessions sessions (initialize); then the sessions of one side
// make their calls, all sessions at once and each one call after another,
// in --slices slices that alternate between the sides, so that load from
// elsewhere on the machine falls on both alike; then every session ends
// with DELETE. A round's ratio is the median of the ratios of adjacent
// slices.
// wink is called with planning_setup_plan and bare with echo; every
// argument names its session and call, and every response is checked to
// name the same, so that a response reaching the wrong session is counted
// as a leak.
//
// It reports each side's throughput (calls per second over the call phase)
// per round, the median of the rounds' ratios wink/bare, the errors and
// leaks, and wink's resident memory and live session count (from /healthz)
// after each round, once its sessions have ended: memory is flat when it
// does not grow from round to round.
//
// The exit status is 1 if any call failed or leaked, if sessions outlived a
// round, or if --min-ratio is set and the median ratio is below it; 2 if
// the run could not be made.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() { os.Exit(run()) }

type side struct {
	label string
	url   string // the /mcp endpoint
	tool  string
	args  func(session, call int) map[string]any
	want  func(session, call int) string
	cmd   *exec.Cmd
}

func run() int {
	winkCmd := flag.String("wink", "", "wink-mcp binary")
	winkArgs := flag.String("wink-args", "", "extra space-separated arguments for wink-mcp, e.g. \"--config planning.yaml\"")
	bareCmd := flag.String("bare", "", "bench/bare binary")
	sessions := flag.Int("sessions", 64, "concurrent sessions per side and round")
	calls := flag.Int("calls", 200, "calls per session")
	rounds := flag.Int("rounds", 3, "rounds; sides alternate which goes first")
	slicesN := flag.Int("slices", 10, "each round's calls are made in this many slices, alternating between the sides")
	minRatio := flag.Float64("min-ratio", 0, "fail if the median wink/bare ratio is below this")
	flag.Parse()
	if *winkCmd == "" || *bareCmd == "" {
		fmt.Fprintln(os.Stderr, "httpload: --wink and --bare are required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	wink, err := startWink(ctx, *winkCmd, strings.Fields(*winkArgs)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		return 2
	}
	defer stop(wink.cmd)
	bare, err := startBare(ctx, *bareCmd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		return 2
	}
	defer stop(bare.cmd)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * *sessions, MaxIdleConnsPerHost: 2 * *sessions}, Timeout: time.Minute}
	status := 0
	var ratios []float64
	var rss []int64
	fmt.Printf("%d sessions per side, %d calls per session and round in %d slices alternating wink and bare; wink planning_setup_plan vs bare echo\n\n",
		*sessions, *calls, *slicesN)
	fmt.Printf("%-6s %14s %14s %14s %8s %8s %12s %14s\n", "round", "wink calls/s", "bare calls/s", "median ratio", "errors", "leaks", "wink RSS MiB", "wink sessions")
	for r := range *rounds {
		order := []*side{wink, bare}
		if r%2 == 1 {
			order = []*side{bare, wink}
		}
		runs := map[string]*sessionSet{}
		for _, s := range order {
			runs[s.label] = openSessions(hc, s, *sessions)
		}
		per := max(*calls / *slicesN, 1)
		var roundRatios []float64
		for sl := range *slicesN {
			rate := map[string]float64{}
			for _, s := range order {
				rate[s.label] = runs[s.label].calls(sl*per, per)
			}
			roundRatios = append(roundRatios, rate["wink"]/rate["bare"])
		}
		for _, s := range order {
			runs[s.label].close()
		}
		w, b := runs["wink"], runs["bare"]
		slices.Sort(roundRatios)
		ratio := roundRatios[len(roundRatios)/2]
		ratios = append(ratios, ratio)
		live, err := liveSessions(hc, wink.url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "httpload:", err)
			return 2
		}
		mem := residentKiB(wink.cmd.Process.Pid)
		rss = append(rss, mem)
		errs, leaks := w.errors.Load()+b.errors.Load(), w.leaks.Load()+b.leaks.Load()
		fmt.Printf("%-6d %14.0f %14.0f %14.3f %8d %8d %12.1f %14d\n", r+1, w.rate(), b.rate(), ratio, errs, leaks, float64(mem)/1024, live)
		for _, e := range append(w.samples, b.samples...) {
			fmt.Println("   ", e)
		}
		if errs > 0 || leaks > 0 || live != 0 {
			status = 1
		}
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	fmt.Printf("\nthroughput ratio wink/bare (median of the rounds' medians of adjacent slices): %.3f\n", med)
	fmt.Printf("wink RSS after each round, its sessions ended (MiB):")
	for _, m := range rss {
		fmt.Printf(" %.1f", float64(m)/1024)
	}
	fmt.Printf(" (last/first %.2f)\n", float64(rss[len(rss)-1])/float64(rss[0]))
	if *minRatio > 0 && med < *minRatio {
		fmt.Printf("FAIL: ratio %.3f below %.2f\n", med, *minRatio)
		status = 1
	}
	return status
}

// sessionSet is one side's sessions in one round.
type sessionSet struct {
	hc      *http.Client
	s       *side
	sids    []string
	done    atomic.Int64
	errors  atomic.Int64
	leaks   atomic.Int64
	elapsed time.Duration
	mu      sync.Mutex
	samples []string // the first few problems
}

func (set *sessionSet) note(format string, a ...any) {
	set.mu.Lock()
	defer set.mu.Unlock()
	if len(set.samples) < 3 {
		set.samples = append(set.samples, set.s.label+": "+fmt.Sprintf(format, a...))
	}
}

func (set *sessionSet) rate() float64 { return float64(set.done.Load()) / set.elapsed.Seconds() }

// openSessions initializes n sessions on s.
func openSessions(hc *http.Client, s *side, n int) *sessionSet {
	set := &sessionSet{hc: hc, s: s, sids: make([]string, n)}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sid, err := initialize(hc, s.url)
			if err != nil {
				set.errors.Add(1)
				set.note("initialize: %v", err)
			}
			set.sids[i] = sid
		})
	}
	wg.Wait()
	return set
}

// calls makes k calls on every session at once, numbered from first, and
// returns the calls per second.
func (set *sessionSet) calls(first, k int) float64 {
	var wg sync.WaitGroup
	var ok atomic.Int64
	start := time.Now()
	for i, sid := range set.sids {
		if sid == "" {
			continue
		}
		wg.Go(func() {
			for c := first; c < first+k; c++ {
				text, err := call(set.hc, set.s.url, sid, set.s.tool, set.s.args(i, c), c+10)
				switch {
				case err != nil:
					set.errors.Add(1)
					set.note("call: %v", err)
				case !strings.Contains(text, set.s.want(i, c)):
					set.leaks.Add(1)
					set.note("session %d call %d got %q", i, c, text)
				default:
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	set.elapsed += d
	set.done.Add(ok.Load())
	return float64(ok.Load()) / d.Seconds()
}

// close ends every session with DELETE.
func (set *sessionSet) close() {
	var wg sync.WaitGroup
	for _, sid := range set.sids {
		if sid != "" {
			wg.Go(func() {
				if err := deleteSession(set.hc, set.s.url, sid); err != nil {
					set.errors.Add(1)
					set.note("DELETE: %v", err)
				}
			})
		}
	}
	wg.Wait()
}

func post(hc *http.Client, url, sid string, body any) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return hc.Do(req)
}

func initialize(hc *http.Client, url string) (string, error) {
	resp, err := post(hc, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "httpload", "version": "1"}}})
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return "", fmt.Errorf("initialize: status %d", resp.StatusCode)
	}
	resp, err = post(hc, url, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sid, nil
}

// call makes one tools/call and returns the result's text.
func call(hc *http.Client, url, sid, tool string, args map[string]any, id int) (string, error) {
	resp, err := post(hc, url, sid, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The last data line holds the response.
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data: "); ok && d != "" {
				body = []byte(d)
				break
			}
		}
	}
	var m struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "", fmt.Errorf("bad response %q: %w", body, err)
	}
	switch {
	case m.Error != nil:
		return "", errors.New(m.Error.Message)
	case m.ID != id:
		return "", fmt.Errorf("response id %d, want %d", m.ID, id)
	case m.Result.IsError || len(m.Result.Content) == 0:
		return "", fmt.Errorf("error result %s", body)
	}
	return m.Result.Content[0].Text, nil
}

func deleteSession(hc *http.Client, url, sid string) error {
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// liveSessions reads wink's live session count from /healthz.
func liveSessions(hc *http.Client, mcpURL string) (int, error) {
	resp, err := hc.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/healthz")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var h struct {
		Sessions int `json:"sessions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return 0, fmt.Errorf("/healthz: %w", err)
	}
	return h.Sessions, nil
}

// residentKiB returns the resident set size of a process, from /proc.
func residentKiB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func startWink(ctx context.Context, bin string, extra ...string) (*side, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--http", "127.0.0.1:0", "--log-format", "json"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`"msg":"serving MCP over HTTP".*?"addr":"([^"]+)"`)
	sc := bufio.NewScanner(stderr)
	addr := ""
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		stop(cmd)
		return nil, errors.New("wink-mcp did not report its address")
	}
	go io.Copy(io.Discard, stderr)
	return &side{
		label: "wink", url: "http://" + addr + "/mcp", tool: "planning_setup_plan", cmd: cmd,
		args: func(s, c int) map[string]any {
			return map[string]any{"objective": fmt.Sprintf("session %d call %d", s, c), "initial_steps": []string{"a", "b", "c"}}
		},
		want: func(s, c int) string { return fmt.Sprintf("Objective: session %d call %d\n", s, c) },
	}, nil
}

func startBare(ctx context.Context, bin string) (*side, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, bin, "--http", addr)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &side{
		label: "bare", url: "http://" + addr + "/mcp", tool: "echo", cmd: cmd,
		args: func(s, c int) map[string]any { return map[string]any{"text": fmt.Sprintf("session %d call %d", s, c)} },
		want: func(s, c int) string { return fmt.Sprintf("session %d call %d", s, c) },
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			stop(cmd)
			return nil, fmt.Errorf("bare did not start on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stop(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	}
}
