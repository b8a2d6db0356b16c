// Command state measures what keeping sessions costs wink-mcp, over the
// real binary, one figure per command:
//
//	state sessions --bin wink-mcp [--n 10000] [--protocol modern|legacy]
//	state growth   --bin wink-mcp [--writes 4000] [--size 100000]
//	state commit   --bin wink-mcp [--files 10000] [--commits 10] [--restarts 5]
//	state takeover --bin wink-mcp [--rounds 10]
//	state console  --bin wink-mcp [--n 1000] [--calls 1000] [--rounds 10]
//	state percall  --bin wink-mcp [--files 10000] [--layout flat|dirs] [--calls 1000] [--stored] [--disk] [--against 0 [--turn 100]]
//
// sessions starts an HTTP server and opens --n sessions, each with a plan
// (planning_setup_plan) and a 1 KB file (write_file): with protocol modern
// (2026-07-28) a session is a handle the first call mints and the second
// names, with legacy (2025-11-25) an Mcp-Session-Id. It reports the
// server's resident memory per session: the growth of its RSS from after
// a warm-up to after the last session, divided by --n, and the same for
// the Go heap in use (from /metrics).
//
// growth makes --writes writes of --size bytes to one file in one stdio
// session and reports how the server's RSS grows.
//
// commit builds a workspace of --files files of 1 KB in one stdio session
// (apply_edits, 100 files a call), then makes --commits writes of one new
// 1 KB file and reports the bytes each adds to the store's directory. It
// then restarts the server --restarts times on the same state directory
// and session, and reports the time from process start to the answer to
// initialize and to the first call on the session (a read of the file
// written last).
//
// takeover starts two stdio processes with one --session on a fresh state
// directory, kills the first, which holds the store, with SIGKILL while
// calls are made through the second, and reports the time from the kill to
// the second's next answered call: the median, least and most of --rounds
// rounds.
//
// console starts an HTTP server with a bearer token, opens --n sessions
// with it (as sessions does) and one more with --calls calls in its log,
// and reports the time to the first byte and to the whole page of the
// console's sessions page and of that session's page: the median of
// --rounds fetches.
//
// percall builds a session holding --files files of 100 bytes, all in one
// directory (--layout flat) or in directories of 100 (dirs), and reports
// for each of write_file (a new 1 KB file among them), read_file,
// edit_file, planning_update_step and rm the server's CPU per call (from
// /proc, the server alone, to the nanosecond) over --calls calls and the
// bytes it writes per call (wchar in /proc: with --stored, the session
// named by --session in the embedded store, mostly the store's; also its
// answers and log). A call's figure includes its share of the work done
// every so many calls (a collection of the Go heap, every few hundred
// calls in a session of 100,000 files; a sweep of the store, every 256
// blobs written), so --calls must be many more than that for figures that
// can be compared. With --stored it then restarts the server --restarts
// times and reports the time to the answer to its first call, as commit
// does. With --disk the files are in a disk workspace (--workspace), each
// read once before the measurement. With --against M, a second server
// holds a session of M files (0: an empty one) and the two take turns of
// --turn calls, so that what else the machine does falls on both alike,
// and the report adds the ratio of their CPU per call, over all turns and
// turn by turn, and of their restarts.
//
// Sessions are kept where the binary keeps them by default: in the
// embedded store, under a state directory of the command's own (removed
// at the end). --flags adds flags to the server's command line (split at
// blanks), such as "--store memory". Every failed call fails the command
// (exit status 1; bad flags give 2).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// config is what a command measures, from its flags.
type config struct {
	bin      string
	flags    []string
	n        int
	protocol string
	conc     int
	writes   int
	size     int
	files    int
	commits  int
	restarts int
	rounds   int
	layout   string
	stored   bool
	against  int
	turn     int
	disk     bool
	calls    int
	timeout  time.Duration
	dir      string // the state directory, made by run
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are the measurements, by name.
var commands = map[string]func(context.Context, config, io.Writer) error{
	"sessions": sessions,
	"growth":   growth,
	"commit":   commit,
	"takeover": takeover,
	"console":  consolePages,
	"percall":  percall,
}

// run runs the command args name, prints its report on stdout and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || commands[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: state sessions|growth|commit|takeover|console|percall --bin WINK-MCP [flags]; state CMD -h for the flags")
		return 2
	}
	cmd := commands[args[0]]
	var cfg config
	fs := flag.NewFlagSet("state "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.bin, "bin", "", "the wink-mcp binary")
	extra := fs.String("flags", "", "more flags for the server, split at blanks")
	fs.IntVar(&cfg.n, "n", 10000, "sessions: the sessions to open")
	fs.StringVar(&cfg.protocol, "protocol", "modern", "sessions: modern (handles, 2026-07-28) or legacy (Mcp-Session-Id, 2025-11-25)")
	fs.IntVar(&cfg.conc, "c", 16, "sessions: the sessions opened at once")
	fs.IntVar(&cfg.writes, "writes", 4000, "growth: the writes")
	fs.IntVar(&cfg.size, "size", 100000, "growth: the bytes of each write")
	fs.IntVar(&cfg.files, "files", 10000, "commit, percall: the files of the workspace")
	fs.StringVar(&cfg.layout, "layout", "flat", "percall: flat (one directory) or dirs (directories of 100)")
	fs.BoolVar(&cfg.stored, "stored", false, "percall: keep the session in the embedded store (--session)")
	fs.BoolVar(&cfg.disk, "disk", false, "percall: a disk workspace whose files the session read once")
	fs.IntVar(&cfg.against, "against", -1, "percall: the files of a second session, measured beside the first in turns (-1: none)")
	fs.IntVar(&cfg.turn, "turn", 100, "percall --against: the calls of each turn")
	fs.IntVar(&cfg.commits, "commits", 10, "commit: the writes measured")
	fs.IntVar(&cfg.restarts, "restarts", 5, "commit, percall --stored: the restarts measured")
	fs.IntVar(&cfg.rounds, "rounds", 10, "takeover: the kills measured; console: the fetches of each page")
	fs.IntVar(&cfg.calls, "calls", 0, "console: the calls in the log of the session whose page is fetched (default 1000); percall: the calls of each tool measured (default 1000)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.flags = strings.Fields(*extra)
	if cfg.calls == 0 {
		cfg.calls = 1000
		if args[0] == "percall" {
			cfg.calls = 1000
		}
	}
	switch {
	case cfg.bin == "":
		fmt.Fprintln(stderr, "state: --bin is required")
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "state: unexpected arguments %q\n", fs.Args())
		return 2
	case cfg.protocol != "modern" && cfg.protocol != "legacy":
		fmt.Fprintf(stderr, "state: --protocol %q: want modern or legacy\n", cfg.protocol)
		return 2
	case cfg.layout != "flat" && cfg.layout != "dirs":
		fmt.Fprintf(stderr, "state: --layout %q: want flat or dirs\n", cfg.layout)
		return 2
	case cfg.n <= 0 || cfg.conc <= 0 || cfg.writes <= 0 || cfg.size <= 0 || cfg.files < 0 || cfg.files == 0 && args[0] != "percall" || cfg.commits <= 0 || cfg.restarts <= 0 || cfg.rounds <= 0 || cfg.calls <= 0 || cfg.against < -1 || cfg.turn <= 0:
		fmt.Fprintln(stderr, "state: the counts must be positive (percall takes --files 0)")
		return 2
	}
	dir, err := os.MkdirTemp("", "bench-state")
	if err != nil {
		fmt.Fprintln(stderr, "state:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if err := cmd(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "state %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// argv returns the server's command line: the binary, its state directory,
// args, then the extra flags.
func (cfg config) argv(args ...string) []string {
	return append(append([]string{cfg.bin, "--state-dir", cfg.dir}, args...), cfg.flags...)
}

// text returns n bytes of text, lines that start with tag.
// startStdio starts the stdio server argv and opens its session. The
// caller kills the process it returns; on failure none is left running.
func startStdio(ctx context.Context, argv []string) (*mcpc.Process, *mcpc.Stdio, error) {
	p, c, err := mcpc.StartStdio(ctx, argv)
	if err != nil {
		return nil, nil, err
	}
	if err := mcpc.Initialize(ctx, c); err != nil {
		p.Kill()
		return nil, nil, p.Explain(err)
	}
	return p, c, nil
}

func text(tag string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %d of the benchmark file, with some text to fill it\n", tag, i)
	}
	return b.String()[:n]
}

// mib formats KiB as MiB.
func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
