// Command load measures the tools/call throughput of MCP servers end to end,
// over stdio or Streamable HTTP, and compares them in one run:
//
//	load --transport stdio|http [--inflight 1,16] [--calls N] [--rounds R] \
//		--side bare=bin/bare --tool echo --args '{"text":"hi"}' \
//		--side wink=bin/wink-mcp --tool planning_setup_plan --args '{...}' \
//		--side before=bin/wink-mcp-before
//
// A side is a server with the tool call to make on it: --side NAME=COMMAND,
// then --tool and --args for that side; a side without them makes the call
// of the side before it. COMMAND is split at blanks, without quoting. Over
// stdio the command is the server; over HTTP it is started with
// "--http 127.0.0.1:PORT" added and spoken to at http://127.0.0.1:PORT/mcp,
// or --side NAME=URL names a server already running. The first side is the
// baseline.
//
// In each round, at each in-flight level c, each side in turn gets a fresh
// server: it is started (its cold start is the time to the answer to
// initialize), warmed up, then given --calls calls with exactly c in flight,
// over one session (over HTTP, --sessions spreads them over several), and
// asked to exit (its stdin closed, or SIGTERM over HTTP; killed after 10
// seconds), so that what it does on exit, such as writing a --cpu-profile,
// is done. The order of the sides reverses from one round to the next, so that drift on
// the machine falls on all of them alike. For each level and side the
// report gives the median over rounds of calls/s, the ratio to the baseline
// (the median of each round's ratio), p50 and p99 latency, the server's CPU
// time per call and peak resident memory (from /proc, on Linux), and the
// cold start.
//
// With --interleave N, the sides are measured together instead, under the
// same load of the machine: their servers run side by side and take turns
// of N calls, and the report compares their CPU per call turn by turn
// (interleave.go). The CPU time of a process is read to the nanosecond,
// from each of its threads' schedstat in /proc (cpu.go).
//
// A failed call (an error response, an isError result, a broken transport)
// ends the run with exit status 1; bad flags give 2.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// side is one server to measure and the call to make on it.
type side struct {
	name string
	argv []string // the command that starts the server
	url  string   // or the URL of a running server (HTTP only)
	tool string
	args json.RawMessage
	// also are running processes that serve the side's calls with its
	// server (the holder of a state directory it shares): their CPU time
	// counts as the server's.
	also []int
	// beside is a stdio server started beside each of the side's servers,
	// once it answers, and ended with it (a process sharing its state
	// directory); its CPU time counts as the server's.
	beside []string
}

// config is what to measure.
type config struct {
	transport string
	levels    []int
	calls     int
	warmup    int
	rounds    int
	sessions  int
	// interleave, when positive, is the turn of --interleave
	// (interleave.go): the sides measured together, in turns of as many
	// calls.
	interleave int
	timeout    time.Duration
	sides      []*side
}

// sample is one side's measurement at one level in one round.
type sample struct {
	rate     float64       // calls per second
	p50, p99 time.Duration // latency of a call
	cpu      time.Duration // the server's CPU time per call; 0 if unknown
	rss      int64         // the server's peak resident memory in KiB; 0 if unknown
	cold     time.Duration // from start to the answer to initialize; 0 if not started
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run measures what args ask for, prints the report on stdout and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if cfg.interleave > 0 {
		ms, err := measureAllInterleaved(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "load:", err)
			return 1
		}
		reportInterleaved(stdout, cfg, ms)
		return 0
	}
	samples, err := measureAll(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 1
	}
	report(stdout, cfg, samples)
	return 0
}

// parseFlags returns the configuration that args give, reporting flag
// errors and help on stderr.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.transport, "transport", "stdio", "stdio or http")
	inflight := fs.String("inflight", "1,16", "comma-separated numbers of calls kept in flight")
	fs.IntVar(&cfg.calls, "calls", 5000, "measured calls per side, level and round")
	fs.IntVar(&cfg.warmup, "warmup", 200, "unmeasured calls on each fresh server before measuring")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds; each side's median over them is reported")
	fs.IntVar(&cfg.sessions, "sessions", 1, "over HTTP, sessions the calls in flight are spread over")
	fs.IntVar(&cfg.interleave, "interleave", 0, "measure the sides together, taking turns of `N` calls, and compare their CPU per call turn by turn (0: one after the other)")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	last := func(flag string) (*side, error) {
		if len(cfg.sides) == 0 {
			return nil, fmt.Errorf("%s before the first --side", flag)
		}
		return cfg.sides[len(cfg.sides)-1], nil
	}
	fs.Func("side", "a server to measure, `NAME=COMMAND` or NAME=URL (repeatable; the first is the baseline)", func(v string) error {
		name, target, _ := strings.Cut(v, "=")
		if name == "" || strings.TrimSpace(target) == "" {
			return errors.New("want NAME=COMMAND or NAME=URL")
		}
		s := &side{name: name, args: json.RawMessage("{}")}
		if n := len(cfg.sides); n > 0 {
			s.tool, s.args = cfg.sides[n-1].tool, cfg.sides[n-1].args
		}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			s.url = target
		} else {
			s.argv = strings.Fields(target)
		}
		cfg.sides = append(cfg.sides, s)
		return nil
	})
	fs.Func("tool", "the tool the last --side calls", func(v string) error {
		s, err := last("--tool")
		if err == nil {
			s.tool = v
		}
		return err
	})
	fs.Func("args", "the arguments of the last --side's tool, a JSON object (default {})", func(v string) error {
		s, err := last("--args")
		if err == nil {
			s.args = json.RawMessage(v)
		}
		return err
	})
	fs.Func("cpu-of", "comma-separated ids of running processes that serve the last --side's calls with its server; their CPU time counts as the server's", func(v string) error {
		s, err := last("--cpu-of")
		if err != nil {
			return err
		}
		for f := range strings.SplitSeq(v, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				return fmt.Errorf("%q is not a process id", f)
			}
			s.also = append(s.also, pid)
		}
		return nil
	})
	fs.Func("beside", "a stdio server `COMMAND` started beside each server of the last --side once it answers, and ended with it; its CPU time counts as the server's", func(v string) error {
		s, err := last("--beside")
		if err == nil {
			s.beside = strings.Fields(v)
		}
		return err
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	cfg.levels, err = parseLevels(*inflight)
	switch {
	case err != nil:
		return cfg, fmt.Errorf("--inflight: %w", err)
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.transport != "stdio" && cfg.transport != "http":
		return cfg, fmt.Errorf("--transport %q: want stdio or http", cfg.transport)
	case len(cfg.sides) == 0:
		return cfg, errors.New("no --side to measure")
	case cfg.calls <= 0 || cfg.rounds <= 0 || cfg.sessions <= 0 || cfg.warmup < 0 || cfg.interleave < 0:
		return cfg, errors.New("--calls, --rounds and --sessions must be positive, --warmup and --interleave not negative")
	}
	for _, s := range cfg.sides {
		switch {
		case s.tool == "":
			return cfg, fmt.Errorf("side %s: no --tool", s.name)
		case s.url != "" && cfg.transport == "stdio":
			return cfg, fmt.Errorf("side %s: a URL needs --transport http", s.name)
		case !json.Valid(s.args):
			return cfg, fmt.Errorf("side %s: --args is not JSON", s.name)
		}
	}
	return cfg, nil
}

// parseLevels parses a comma-separated list of positive integers.
func parseLevels(s string) ([]int, error) {
	var levels []int
	for f := range strings.SplitSeq(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		levels = append(levels, k)
	}
	return levels, nil
}

// measureAll measures every side at every level in every round; the
// samples are indexed by level, side and round.
func measureAll(ctx context.Context, cfg config) ([][][]sample, error) {
	samples := make([][][]sample, len(cfg.levels))
	for l := range samples {
		samples[l] = make([][]sample, len(cfg.sides))
	}
	order := make([]int, len(cfg.sides))
	for r := range cfg.rounds {
		for l, c := range cfg.levels {
			for i := range order {
				order[i] = i
			}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, i := range order {
				s, err := measure(ctx, cfg, cfg.sides[i], c)
				if err != nil {
					return nil, fmt.Errorf("side %s, in-flight %d, round %d: %w", cfg.sides[i].name, c, r+1, err)
				}
				samples[l][i] = append(samples[l][i], s)
			}
		}
	}
	return samples, nil
}

// measure starts a fresh server for s, warms it up and measures cfg.calls
// calls with c in flight.
func measure(ctx context.Context, cfg config, s *side, c int) (sample, error) {
	w, err := start(ctx, cfg, s, c)
	defer w.close()
	if err != nil {
		return sample{}, err
	}
	cpu0 := w.cpu()
	lat, elapsed, err := calls(ctx, w.srv.clients, w.params, c, cfg.calls)
	if err != nil {
		return sample{}, w.srv.explain(err)
	}
	slices.Sort(lat)
	return sample{
		rate: float64(cfg.calls) / elapsed.Seconds(),
		p50:  percentile(lat, 0.50),
		p99:  percentile(lat, 0.99),
		cpu:  (w.cpu() - cpu0) / time.Duration(cfg.calls),
		rss:  w.srv.peakRSS(),
		cold: w.srv.cold,
	}, nil
}

// warm is a side's fresh server, warmed up, with what else serves its
// calls.
type warm struct {
	side   *side
	srv    *server
	beside *mcpc.Process
	params *template
}

// start starts a fresh server for s, and the server beside it if s has
// one, and warms it up with cfg.warmup calls, c in flight. The caller must
// close it, also on error.
func start(ctx context.Context, cfg config, s *side, c int) (*warm, error) {
	w := &warm{side: s, params: newTemplate(mcpc.Params(s.tool, s.args, false))}
	var err error
	if w.srv, err = open(ctx, cfg.transport, s, cfg.sessions); err != nil {
		return w, err
	}
	if s.beside != nil {
		p, bc, err := mcpc.StartStdio(ctx, s.beside)
		w.beside = p
		if err == nil {
			err = mcpc.Initialize(ctx, bc)
		}
		if err != nil {
			return w, fmt.Errorf("beside: %w", p.Explain(err))
		}
	}
	if _, _, err := calls(ctx, w.srv.clients, w.params, c, cfg.warmup); err != nil {
		return w, w.srv.explain(fmt.Errorf("warmup: %w", err))
	}
	return w, nil
}

// cpu returns the CPU time used so far by the processes that serve the
// side's calls: its server, the server beside it and those of --cpu-of.
func (w *warm) cpu() time.Duration {
	t := w.srv.cpuTime()
	if w.beside != nil {
		t += mcpc.CPUTimeOf(w.beside.Pid())
	}
	for _, pid := range w.side.also {
		t += mcpc.CPUTimeOf(pid)
	}
	return t
}

// close ends the server beside, then the server.
func (w *warm) close() {
	if w.beside != nil {
		w.beside.Kill()
	}
	if w.srv != nil {
		w.srv.close()
	}
}

// calls makes n calls with params with exactly c in flight: c workers,
// worker i on clients[i mod len(clients)], each making one call after
// another. It returns each call's latency and the time all took, or the
// first failure.
func calls(ctx context.Context, clients []mcpc.Client, params *template, c, n int) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	t0 := time.Now()
	for w := range min(c, n) {
		cl := clients[w%len(clients)]
		g.Go(func() error {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				p := params.next()
				start := time.Now()
				if _, err := mcpc.ToolCall(ctx, cl, p); err != nil {
					return err
				}
				lat[i] = time.Since(start)
			}
			return nil
		})
	}
	err := g.Wait()
	return lat, time.Since(t0), err
}

// template is the params of a call, in which every {{n}} is replaced by
// the number of the call.
type template struct {
	parts [][]byte // the params split at each {{n}}
	n     atomic.Int64
}

// placeholder is what a call's number replaces in its arguments.
const placeholder = "{{n}}"

func newTemplate(params json.RawMessage) *template {
	return &template{parts: bytes.Split(params, []byte(placeholder))}
}

// next returns the params of the next call.
func (t *template) next() json.RawMessage {
	if len(t.parts) == 1 {
		return t.parts[0]
	}
	n := strconv.AppendInt(nil, t.n.Add(1)-1, 10)
	return bytes.Join(t.parts, n)
}

// report prints a table per level: each side's medians over rounds.
func report(w io.Writer, cfg config, samples [][][]sample) {
	fmt.Fprintf(w, "%s, %d rounds of %d calls per side and level", cfg.transport, cfg.rounds, cfg.calls)
	if cfg.transport == "http" {
		fmt.Fprintf(w, " over %d session(s) per server", cfg.sessions)
	}
	fmt.Fprintln(w, "; medians over rounds")
	for l, c := range cfg.levels {
		fmt.Fprintf(w, "\nin-flight %d\n", c)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "side\tcalls/s\tratio\tratio range\tp50 ms\tp99 ms\tCPU µs/call\tpeak RSS MiB\tstart ms\t")
		for i, s := range cfg.sides {
			var ratios []float64
			for r, smp := range samples[l][i] {
				ratios = append(ratios, smp.rate/samples[l][0][r].rate)
			}
			med := func(f func(sample) float64) float64 {
				var v []float64
				for _, smp := range samples[l][i] {
					v = append(v, f(smp))
				}
				return median(v)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.3f\t%.3f-%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t\n", s.name,
				med(func(s sample) float64 { return s.rate }),
				median(ratios), slices.Min(ratios), slices.Max(ratios),
				med(func(s sample) float64 { return ms(s.p50) }),
				med(func(s sample) float64 { return ms(s.p99) }),
				known(med(func(s sample) float64 { return float64(s.cpu) / 1e3 }), "%.1f"),
				known(med(func(s sample) float64 { return float64(s.rss) / 1024 }), "%.1f"),
				known(med(func(s sample) float64 { return ms(s.cold) }), "%.2f"))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w, "\nratio: the side's calls/s over the first side's in the same round, median (and range) over rounds")
}

// known formats v, or "-" for 0, a figure that could not be measured.
func known(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// percentile returns the nearest-rank p-quantile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// median returns the median of values, the mean of the middle two for an
// even number.
func median(values []float64) float64 {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
