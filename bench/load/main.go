// Command load measures an MCP server spoken to over stdio: its cold start
// (spawn to initialize response) and its tools/call throughput and latency
// at fixed numbers of requests in flight.
//
// It speaks newline-delimited JSON-RPC 2.0 on the server's stdin and stdout
// with its own small client, so that the client adds as little and as
// predictable overhead as possible.
//
// Measure one server:
//
//	load --cmd "bin/bare" --tool echo --args '{"text":"hi"}' \
//		--inflight 1,16 --calls 20000 --cold 20 [--label NAME] [--json]
//
// Compare two servers in interleaved rounds:
//
//	load --compare --cmd "bin/wink-mcp" --tool planning_setup_plan --args '{...}' \
//		--cmd2 "bin/bare" --tool2 setup_plan --args2 '{...}' --rounds 3
//
// In each round of a comparison, the cold starts alternate between A and B,
// and at each in-flight level both sides' calls are spread over --procs
// warmed-up processes per side and made in --slices slices that alternate
// between the sides, so that load from elsewhere on the machine falls on
// both alike. The reported A/B is the median of ratios of slices adjacent in
// time; a comparison of a server with itself gives about 1.
//
// The exit status is 1 if any call failed (an error response, an isError
// result or a timeout), 2 if the run could not be completed, 0 otherwise.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the measurement and prints it to stdout. It returns
// the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cmdA     = fs.String("cmd", "", "server command (program and arguments, no shell; quotes group words)")
		toolA    = fs.String("tool", "", "tool to call")
		argsA    = fs.String("args", "{}", "tool arguments, a JSON object")
		labelA   = fs.String("label", "", "name of the server in reports (default: program name)")
		doCmp    = fs.Bool("compare", false, "compare --cmd (A) with --cmd2 (B) in interleaved rounds")
		cmdB     = fs.String("cmd2", "", "with --compare: second server command (B)")
		toolB    = fs.String("tool2", "", "with --compare: tool to call on B (default: --tool)")
		argsB    = fs.String("args2", "", "with --compare: tool arguments for B (default: --args)")
		labelB   = fs.String("label2", "", "with --compare: name of B in reports (default: program name)")
		rounds   = fs.Int("rounds", 3, "with --compare: number of interleaved rounds; each side's median is reported")
		procs    = fs.Int("procs", 4, "with --compare: server processes per side, level and round; calls are spread over them")
		slices   = fs.Int("slices", 20, "with --compare: each side's calls per level and round are made in this many slices, alternating between A and B")
		inflight = fs.String("inflight", "1,16", "comma-separated numbers of requests kept in flight")
		calls    = fs.Int("calls", 20000, "measured tools/call requests per in-flight level")
		warmup   = fs.Int("warmup", 500, "unmeasured calls made on each fresh server process before measuring")
		cold     = fs.Int("cold", 20, "cold starts to time (per round with --compare); 0 skips them")
		timeout  = fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
		callTO   = fs.Duration("call-timeout", 30*time.Second, "bound on each request")
		asJSON   = fs.Bool("json", false, "print one JSON object per measurement instead of tables")
		quiet    = fs.Bool("quiet", false, "do not pass the servers' stderr through")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "load: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected arguments: %q", fs.Args())
	}
	levels, err := parseLevels(*inflight)
	if err != nil {
		return usage("--inflight: %v", err)
	}
	argvA, err := splitCommand(*cmdA)
	if err != nil {
		return usage("--cmd: %v", err)
	}
	if len(argvA) == 0 {
		return usage("--cmd: need a server command")
	}
	if *toolA == "" {
		return usage("--tool is required")
	}
	var serverStderr io.Writer = stderr
	if *quiet {
		serverStderr = nil
	}
	a := Config{
		Label: labelFor(*labelA, argvA), Cmd: argvA, Tool: *toolA, Args: json.RawMessage(*argsA),
		InFlight: levels, Calls: *calls, Warmup: *warmup, Cold: *cold,
		CallTimeout: *callTO, Stderr: serverStderr,
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if !*doCmp {
		if *cmdB != "" {
			return usage("--cmd2 needs --compare")
		}
		rep, err := measure(ctx, a)
		if err != nil {
			fmt.Fprintf(stderr, "load: %v\n", runError(err, *timeout))
			return 2
		}
		if *asJSON {
			printJSON(stdout, reportItems(rep)...)
		} else {
			printReport(stdout, a, rep)
		}
		return failureStatus(stderr, rep.Failures())
	}

	argvB, err := splitCommand(*cmdB)
	if err != nil {
		return usage("--cmd2: %v", err)
	}
	if len(argvB) == 0 {
		return usage("--cmd2: need a second server command with --compare")
	}
	b := a
	b.Label, b.Cmd = labelFor(*labelB, argvB), argvB
	if *toolB != "" {
		b.Tool = *toolB
	}
	if *argsB != "" {
		b.Args = json.RawMessage(*argsB)
	}
	if a.Label == b.Label {
		a.Label, b.Label = a.Label+" (A)", b.Label+" (B)"
	}
	rep, err := compare(ctx, a, b, Schedule{Rounds: *rounds, Procs: *procs, Slices: *slices})
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", runError(err, *timeout))
		return 2
	}
	if *asJSON {
		var items []any
		for r := range rep.A {
			items = append(items, reportItems(rep.A[r])...)
			items = append(items, reportItems(rep.B[r])...)
		}
		for _, l := range rep.Levels {
			items = append(items, l)
		}
		if rep.Cold != nil {
			items = append(items, rep.Cold)
		}
		printJSON(stdout, items...)
	} else {
		printCompare(stdout, a, b, rep)
	}
	return failureStatus(stderr, rep.Failures())
}

// runError explains err, naming the --timeout flag when the run hit it and
// saying so when the run was interrupted by a signal.
func runError(err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("run exceeded --timeout %v", timeout)
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	}
	return err
}

// failureStatus reports failed calls on stderr and returns the exit status.
func failureStatus(stderr io.Writer, failures int) int {
	if failures > 0 {
		fmt.Fprintf(stderr, "load: %d failed calls: the run is not valid\n", failures)
		return 1
	}
	return 0
}

// labelFor returns label, or the base name of the program if label is empty.
func labelFor(label string, argv []string) string {
	if label != "" {
		return label
	}
	return filepath.Base(argv[0])
}

// parseLevels parses a comma-separated list of positive integers.
func parseLevels(s string) ([]int, error) {
	var levels []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, err := strconv.Atoi(f)
		if err != nil || k <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		levels = append(levels, k)
	}
	if len(levels) == 0 {
		return nil, errors.New("no levels given")
	}
	return levels, nil
}

// splitCommand splits a command line into words the way a POSIX shell
// would for plain words and quotes: blanks separate words, single quotes
// keep everything literally, double quotes keep blanks and allow backslash
// escapes, and a backslash outside quotes escapes the next character. It
// does no expansion of any kind.
func splitCommand(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, c := range s {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case quote == '"':
			switch c {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(c)
			}
		case c == '\\':
			escaped, inWord = true, true
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if escaped {
		return nil, errors.New("trailing backslash")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// reportItems lists the measurements of rep for JSON output.
func reportItems(rep Report) []any {
	var items []any
	if rep.Cold != nil {
		items = append(items, rep.Cold)
	}
	for _, t := range rep.Throughput {
		items = append(items, t)
	}
	return items
}

// printJSON writes each item as one line of JSON.
func printJSON(w io.Writer, items ...any) {
	enc := json.NewEncoder(w)
	for _, it := range items {
		_ = enc.Encode(it)
	}
}

// printReport writes the measurements of one server as tables.
func printReport(w io.Writer, cfg Config, rep Report) {
	fmt.Fprintf(w, "server %s: %s\ntool %s %s\n\n", cfg.Label, strings.Join(cfg.Cmd, " "), cfg.Tool, cfg.Args)
	if c := rep.Cold; c != nil {
		fmt.Fprintf(w, "cold start (%d runs): median %.2f ms, p90 %.2f ms, min %.2f ms, max %.2f ms\n\n",
			c.Runs, c.MedianMS, c.P90MS, c.MinMS, c.MaxMS)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "in-flight\tcalls\tcalls/s\tp50 ms\tp99 ms\terrors\tisError\ttimeouts\t")
	for _, t := range rep.Throughput {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.3f\t%.3f\t%d\t%d\t%d\t\n",
			t.InFlight, t.Calls, t.CallsPerSec, t.P50MS, t.P99MS, t.Errors, t.ToolErrors, t.Timeouts)
	}
	_ = tw.Flush()
	printFirstErrors(w, rep)
}

// printFirstErrors quotes the first failure of each failed run.
func printFirstErrors(w io.Writer, reps ...Report) {
	for _, rep := range reps {
		for _, t := range rep.Throughput {
			if t.failed() {
				fmt.Fprintf(w, "%s, in-flight %d: first failure: %s\n", t.Label, t.InFlight, t.FirstError)
			}
		}
	}
}

// printCompare writes the comparison of two servers as tables.
func printCompare(w io.Writer, a, b Config, rep CompareReport) {
	fmt.Fprintf(w, "A  %s: %s\n   tool %s %s\n", a.Label, strings.Join(a.Cmd, " "), a.Tool, a.Args)
	fmt.Fprintf(w, "B  %s: %s\n   tool %s %s\n", b.Label, strings.Join(b.Cmd, " "), b.Tool, b.Args)
	sch := rep.Schedule
	fmt.Fprintf(w, "%d rounds; per round and level, %d calls per side over %d processes in %d alternating slices.\n"+
		"calls/s: median over rounds of the median slice rate; latencies: median over rounds\n\n",
		sch.Rounds, a.Calls, sch.Procs, sch.Slices)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "in-flight\tA calls/s\tB calls/s\tA/B\tA p50 ms\tB p50 ms\tA p99 ms\tB p99 ms\t")
	for i, l := range rep.Levels {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", l.InFlight, l.ACallsPerSec, l.BCallsPerSec, l.Ratio,
			medianOver(rep.A, i, func(t Throughput) float64 { return t.P50MS }),
			medianOver(rep.B, i, func(t Throughput) float64 { return t.P50MS }),
			medianOver(rep.A, i, func(t Throughput) float64 { return t.P99MS }),
			medianOver(rep.B, i, func(t Throughput) float64 { return t.P99MS }))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "A/B: median over rounds of the paired ratio (median over slices of A's rate over the")
	fmt.Fprintln(w, "rate of the B slice next to it in time); above 1, A is faster")
	fmt.Fprintln(w, "per round, median slice calls/s (overall calls/s) and paired A/B:")
	for i, l := range rep.Levels {
		fmt.Fprintf(w, "  in-flight %d:\n", l.InFlight)
		for r := range rep.Schedule.Rounds {
			ta, tb := rep.A[r].Throughput[i], rep.B[r].Throughput[i]
			fmt.Fprintf(w, "    round %d: A %.0f (%.0f)  B %.0f (%.0f)  A/B %.3f\n", r+1,
				ta.SliceMedianCallsPerSec, ta.CallsPerSec, tb.SliceMedianCallsPerSec, tb.CallsPerSec, l.RoundRatios[r])
		}
	}
	if c := rep.Cold; c != nil {
		fmt.Fprintf(w, "\ncold start median (%d runs each, alternating A and B): A %.2f ms, B %.2f ms, A/B %.3f\n",
			c.Runs, c.AMedianMS, c.BMedianMS, c.Ratio)
		fmt.Fprintln(w, "(cold start A/B above 1: A starts slower)")
	}
	printFirstErrors(w, append(rep.A, rep.B...)...)
}

// medianOver returns the median over rounds of f applied to the i-th
// throughput run of each report.
func medianOver(reps []Report, i int, f func(Throughput) float64) float64 {
	var v []float64
	for _, r := range reps {
		v = append(v, f(r.Throughput[i]))
	}
	return medianFloat(v)
}
