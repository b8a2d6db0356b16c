package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one server and the load to put on it.
type Config struct {
	// Label names the server in reports.
	Label string
	// Cmd is the server command: program and arguments, run without a shell.
	Cmd []string
	// Tool is the tool called by tools/call.
	Tool string
	// Args is the JSON object passed as the tool's arguments.
	Args json.RawMessage
	// InFlight lists the concurrency levels: for each, exactly that many
	// requests are kept outstanding.
	InFlight []int
	// Calls is the number of measured calls per concurrency level.
	Calls int
	// Warmup is the number of unmeasured calls made on each fresh server
	// process before measuring.
	Warmup int
	// Cold is the number of cold starts to time; 0 skips them.
	Cold int
	// CallTimeout bounds each request, including initialize.
	CallTimeout time.Duration
	// Stderr receives the servers' stderr; nil discards it (the last few
	// kilobytes are still quoted in errors).
	Stderr io.Writer
}

// ColdStart is the time from spawning a server to its initialize response.
type ColdStart struct {
	Kind     string  `json:"kind"`
	Label    string  `json:"label"`
	Round    int     `json:"round,omitempty"`
	Runs     int     `json:"runs"`
	MedianMS float64 `json:"median_ms"`
	P90MS    float64 `json:"p90_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// Throughput is the result of one run of tools/call requests at a fixed
// number of requests in flight.
type Throughput struct {
	Kind      string  `json:"kind"`
	Label     string  `json:"label"`
	Round     int     `json:"round,omitempty"`
	Tool      string  `json:"tool"`
	InFlight  int     `json:"inflight"`
	Calls     int     `json:"calls"`
	ElapsedMS float64 `json:"elapsed_ms"`
	// CallsPerSec is the number of calls over the time taken by them.
	CallsPerSec float64 `json:"calls_per_sec"`
	// Slices is the number of slices the calls were made in (see
	// interleave), and SliceMedianCallsPerSec the median of the slices'
	// rates. It equals CallsPerSec for a run in one slice. Unlike
	// CallsPerSec, it is not thrown off by a burst of load from elsewhere
	// that stalls a few slices.
	Slices                 int     `json:"slices"`
	SliceMedianCallsPerSec float64 `json:"slice_median_calls_per_sec"`
	P50MS                  float64 `json:"p50_ms"`
	P99MS                  float64 `json:"p99_ms"`
	// Errors counts JSON-RPC error responses.
	Errors int `json:"errors"`
	// ToolErrors counts results with isError set.
	ToolErrors int `json:"tool_errors"`
	// Timeouts counts calls with no response within the per-call timeout.
	Timeouts int `json:"timeouts"`
	// FirstError quotes the first failure, if any.
	FirstError string `json:"first_error,omitempty"`

	sliceRates []float64 // calls per second of each slice, in order
}

// failed reports whether the run had any failed call.
func (t Throughput) failed() bool {
	return t.Errors+t.ToolErrors+t.Timeouts > 0
}

// Report holds the measurements of one server.
type Report struct {
	Cold       *ColdStart
	Throughput []Throughput
}

// Failures returns the number of failed calls in the report.
func (r Report) Failures() int {
	n := 0
	for _, t := range r.Throughput {
		n += t.Errors + t.ToolErrors + t.Timeouts
	}
	return n
}

// measure times cfg.Cold cold starts, then runs cfg.Calls calls at each
// in-flight level, each level on a fresh server process.
func measure(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.check(); err != nil {
		return Report{}, err
	}
	var rep Report
	if cfg.Cold > 0 {
		samples := make([]time.Duration, 0, cfg.Cold)
		for range cfg.Cold {
			d, err := coldStart(ctx, cfg)
			if err != nil {
				return rep, err
			}
			samples = append(samples, d)
		}
		rep.Cold = summarizeCold(cfg.Label, 0, samples)
	}
	for _, k := range cfg.InFlight {
		t, err := throughput(ctx, cfg, k)
		if err != nil {
			return rep, err
		}
		rep.Throughput = append(rep.Throughput, t)
	}
	return rep, nil
}

// check validates cfg and fills in defaults.
func (cfg *Config) check() error {
	switch {
	case len(cfg.Cmd) == 0:
		return errors.New("no server command")
	case cfg.Tool == "":
		return errors.New("no tool name")
	case cfg.Calls <= 0:
		return errors.New("calls must be positive")
	case cfg.Warmup < 0 || cfg.Cold < 0:
		return errors.New("warmup and cold must not be negative")
	}
	for _, k := range cfg.InFlight {
		if k <= 0 {
			return fmt.Errorf("in-flight level %d is not positive", k)
		}
	}
	if len(cfg.Args) == 0 {
		cfg.Args = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, cfg.Args); err != nil {
		return fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	if compact.Len() == 0 || compact.Bytes()[0] != '{' {
		return errors.New("tool arguments must be a JSON object")
	}
	cfg.Args = compact.Bytes()
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Label == "" {
		cfg.Label = cfg.Cmd[0]
	}
	return nil
}

// coldStart spawns the server and returns the time from spawn to the
// initialize response. The process is ended before it returns.
func coldStart(ctx context.Context, cfg Config) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t0 := time.Now()
	s, err := start(ctx, cfg.Cmd, cfg.Stderr)
	if err != nil {
		return 0, err
	}
	defer s.close()
	at, err := s.initialize(cfg.CallTimeout)
	if err != nil {
		return 0, fmt.Errorf("%s: cold start: %w", cfg.Label, contextError(ctx, err))
	}
	return at.Sub(t0), nil
}

// contextError prefers ctx's error when ctx is done, since that is why the
// server went away.
func contextError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// throughput starts a fresh server, initializes it, makes cfg.Warmup
// unmeasured calls and then cfg.Calls measured calls, with k in flight.
func throughput(ctx context.Context, cfg Config, k int) (Throughput, error) {
	ts, err := interleave(ctx, []Config{cfg}, k, 1, 1)
	if err != nil {
		return Throughput{}, err
	}
	return ts[0], nil
}

// target is a started, initialized and warmed-up server ready to take
// measured calls at a fixed number in flight.
type target struct {
	cfg   Config
	k     int
	s     *session
	build func(id int64) []byte
}

// openTarget starts the server of cfg, initializes it and makes cfg.Warmup
// unmeasured calls with k in flight. The caller must close the target.
func openTarget(ctx context.Context, cfg Config, k int) (*target, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The message after the id is the same for every call.
	params, err := json.Marshal(struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"arguments"`
	}{cfg.Tool, cfg.Args})
	if err != nil {
		return nil, err
	}
	suffix := slices.Concat([]byte(`,"method":"tools/call","params":`), params, []byte("}\n"))
	build := func(id int64) []byte {
		b := make([]byte, 0, 40+len(suffix))
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = strconv.AppendInt(b, id, 10)
		return append(b, suffix...)
	}

	s, err := start(ctx, cfg.Cmd, cfg.Stderr)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, k: k, s: s, build: build}
	if _, err := s.initialize(cfg.CallTimeout); err != nil {
		t.close()
		return nil, fmt.Errorf("%s: %w", cfg.Label, contextError(ctx, err))
	}
	if cfg.Warmup > 0 {
		if _, err := runCalls(ctx, s, cfg, k, cfg.Warmup, build); err != nil {
			t.close()
			return nil, fmt.Errorf("%s: warmup: %w", cfg.Label, err)
		}
	}
	return t, nil
}

// run makes n measured calls.
func (t *target) run(ctx context.Context, n int) (callStats, error) {
	st, err := runCalls(ctx, t.s, t.cfg, t.k, n, t.build)
	if err != nil {
		return st, fmt.Errorf("%s: %w", t.cfg.Label, err)
	}
	return st, nil
}

// close ends the target's server.
func (t *target) close() {
	t.s.close()
}

// summarize turns the statistics of cfg's calls at k in flight into a
// Throughput.
func summarize(cfg Config, k int, st callStats) Throughput {
	res := Throughput{Kind: "throughput", Label: cfg.Label, Tool: cfg.Tool, InFlight: k, Calls: st.calls}
	res.ElapsedMS = ms(st.elapsed)
	res.CallsPerSec = float64(st.calls) / st.elapsed.Seconds()
	res.Slices = max(1, len(st.sliceRates))
	res.SliceMedianCallsPerSec = res.CallsPerSec
	if len(st.sliceRates) > 1 {
		res.SliceMedianCallsPerSec = medianFloat(st.sliceRates)
	}
	slices.Sort(st.latencies)
	res.P50MS = ms(percentile(st.latencies, 0.50))
	res.P99MS = ms(percentile(st.latencies, 0.99))
	res.Errors, res.ToolErrors, res.Timeouts = st.errors, st.toolErrors, st.timeouts
	res.FirstError = st.firstError
	res.sliceRates = st.sliceRates
	return res
}

// callStats is the raw outcome of runCalls.
type callStats struct {
	calls      int
	elapsed    time.Duration
	latencies  []time.Duration // of answered calls
	errors     int
	toolErrors int
	timeouts   int
	firstError string
	sliceRates []float64 // calls per second of each slice, if in slices
}

// add merges o into st.
func (st *callStats) add(o callStats) {
	st.calls += o.calls
	st.elapsed += o.elapsed
	st.latencies = append(st.latencies, o.latencies...)
	st.errors += o.errors
	st.toolErrors += o.toolErrors
	st.timeouts += o.timeouts
	if st.firstError == "" {
		st.firstError = o.firstError
	}
}

// runCalls makes n calls with exactly k outstanding: k workers each send a
// request, wait for its response and send the next, until n have been sent.
// Failed calls are counted; an error is returned only when the session
// itself fails (the server exited, or ctx is done).
func runCalls(ctx context.Context, s *session, cfg Config, k, n int, build func(int64) []byte) (callStats, error) {
	var (
		next      atomic.Int64
		latencies = make([]time.Duration, n)
		answered  = make([]bool, n)
		mu        sync.Mutex
		st        callStats
		fatal     error
		wg        sync.WaitGroup
	)
	fail := func(kind *int, msg string) {
		mu.Lock()
		defer mu.Unlock()
		*kind++
		if st.firstError == "" {
			st.firstError = msg
		}
	}
	t0 := time.Now()
	for range min(k, n) {
		wg.Go(func() {
			ch := make(chan response, 1)
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				start := time.Now()
				r, err := s.call(ch, timer, cfg.CallTimeout, build)
				switch {
				case errors.Is(err, errCallTimeout):
					fail(&st.timeouts, fmt.Sprintf("no response within %v", cfg.CallTimeout))
					continue
				case err != nil:
					mu.Lock()
					if fatal == nil {
						fatal = contextError(ctx, err)
					}
					mu.Unlock()
					next.Store(int64(n)) // stop the other workers
					return
				}
				latencies[i] = r.at.Sub(start)
				answered[i] = true
				if r.err != nil {
					fail(&st.errors, fmt.Sprintf("error %d: %s", r.err.Code, r.err.Message))
					continue
				}
				var res struct {
					IsError bool `json:"isError"`
				}
				if err := json.Unmarshal(r.result, &res); err != nil {
					fail(&st.errors, "malformed result: "+err.Error())
					continue
				}
				if res.IsError {
					fail(&st.toolErrors, "isError result: "+truncate(string(r.result), 300))
				}
			}
		})
	}
	wg.Wait()
	st.elapsed = time.Since(t0)
	st.calls = n
	if fatal != nil {
		return st, fatal
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	st.latencies = latencies[:0]
	for i, d := range latencies {
		if answered[i] {
			st.latencies = append(st.latencies, d)
		}
	}
	return st, nil
}

// summarizeCold computes the statistics of cold-start samples.
func summarizeCold(label string, round int, samples []time.Duration) *ColdStart {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return &ColdStart{
		Kind:     "cold_start",
		Label:    label,
		Round:    round,
		Runs:     len(sorted),
		MedianMS: ms(median(sorted)),
		P90MS:    ms(percentile(sorted, 0.90)),
		MinMS:    ms(sorted[0]),
		MaxMS:    ms(sorted[len(sorted)-1]),
	}
}

// percentile returns the nearest-rank p-quantile of sorted values (0 for
// none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// median returns the median of sorted values, averaging the middle two when
// their number is even.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// medianFloat returns the median of values.
func medianFloat(values []float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// truncate shortens s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// CompareLevel compares the throughput of the two servers at one in-flight
// level. Each side's figure is the median over rounds of its median slice
// rate (Throughput.SliceMedianCallsPerSec).
type CompareLevel struct {
	Kind         string  `json:"kind"`
	LabelA       string  `json:"label_a"`
	LabelB       string  `json:"label_b"`
	InFlight     int     `json:"inflight"`
	ACallsPerSec float64 `json:"a_calls_per_sec"`
	BCallsPerSec float64 `json:"b_calls_per_sec"`
	// Ratio is A's rate over B's, above 1 when A is faster. It is taken
	// from paired measurements: the median over rounds of each round's
	// paired ratio (see pairedRatio). Pairing matters on a busy machine,
	// where the rates of both sides swing together from round to round and
	// the ratio of the two medians may compare different rounds.
	Ratio float64 `json:"ratio"`
	// RoundRatios holds each round's paired ratio.
	RoundRatios []float64 `json:"round_ratios"`
	// RatioOfMedians is ACallsPerSec over BCallsPerSec.
	RatioOfMedians float64 `json:"ratio_of_medians"`
}

// pairedRatio returns the median, over the slices of one interleaved run,
// of the ratio of A's slice rate to that of B's slice run next to it in
// time.
func pairedRatio(a, b Throughput) float64 {
	n := min(len(a.sliceRates), len(b.sliceRates))
	if n == 0 {
		return a.SliceMedianCallsPerSec / b.SliceMedianCallsPerSec
	}
	r := make([]float64, n)
	for i := range n {
		r[i] = a.sliceRates[i] / b.sliceRates[i]
	}
	return medianFloat(r)
}

// CompareCold compares the cold starts of the two servers, as the median
// of all of each side's samples.
type CompareCold struct {
	Kind      string  `json:"kind"`
	LabelA    string  `json:"label_a"`
	LabelB    string  `json:"label_b"`
	Runs      int     `json:"runs"`
	AMedianMS float64 `json:"a_median_ms"`
	BMedianMS float64 `json:"b_median_ms"`
	// Ratio is A's median over B's: above 1, A starts slower.
	Ratio float64 `json:"ratio"`
}

// CompareReport is the outcome of compare.
type CompareReport struct {
	Schedule Schedule
	// A and B hold each side's measurements, one Report per round.
	A, B   []Report
	Levels []CompareLevel
	Cold   *CompareCold
}

// Failures returns the number of failed calls on both sides.
func (c CompareReport) Failures() int {
	n := 0
	for _, r := range slices.Concat(c.A, c.B) {
		n += r.Failures()
	}
	return n
}

// Schedule says how compare interleaves the two servers.
type Schedule struct {
	// Rounds is the number of rounds; each side's result is its median
	// over the rounds.
	Rounds int
	// Procs is the number of server processes per side and in-flight level
	// in each round; the side's calls are spread over them, so that the
	// luck of one process (say, where the kernel placed its threads) does
	// not decide the result.
	Procs int
	// Slices is the number of slices each side's calls are made in per
	// level and round; slices alternate between the sides (see interleave).
	Slices int
}

// compare measures a and b in interleaved rounds so that machine noise
// affects both alike. In each round the cold starts alternate A, B, A, B,
// and then, for each in-flight level, the calls of both sides are made by
// interleave. The in-flight levels, call, warmup and cold counts are taken
// from a. The result for each side is the median over the rounds of its
// median slice rate, and of all its cold starts.
func compare(ctx context.Context, a, b Config, sch Schedule) (CompareReport, error) {
	if sch.Rounds <= 0 || sch.Procs <= 0 || sch.Slices <= 0 {
		return CompareReport{}, errors.New("rounds, procs and slices must be positive")
	}
	b.InFlight, b.Calls, b.Warmup, b.Cold = a.InFlight, a.Calls, a.Warmup, a.Cold
	if err := a.check(); err != nil {
		return CompareReport{}, fmt.Errorf("A: %w", err)
	}
	if err := b.check(); err != nil {
		return CompareReport{}, fmt.Errorf("B: %w", err)
	}
	sch.Procs = min(sch.Procs, a.Calls)
	sch.Slices = min(max(sch.Slices, sch.Procs), a.Calls)
	rep := CompareReport{Schedule: sch}
	var coldA, coldB []time.Duration
	for round := 1; round <= sch.Rounds; round++ {
		ra, rb := Report{}, Report{}
		if a.Cold > 0 {
			var sa, sb []time.Duration
			for range a.Cold {
				d, err := coldStart(ctx, a)
				if err != nil {
					return rep, err
				}
				sa = append(sa, d)
				if d, err = coldStart(ctx, b); err != nil {
					return rep, err
				}
				sb = append(sb, d)
			}
			ra.Cold, rb.Cold = summarizeCold(a.Label, round, sa), summarizeCold(b.Label, round, sb)
			coldA, coldB = append(coldA, sa...), append(coldB, sb...)
		}
		for _, k := range a.InFlight {
			ts, err := interleave(ctx, []Config{a, b}, k, sch.Procs, sch.Slices)
			if err != nil {
				return rep, err
			}
			ts[0].Round, ts[1].Round = round, round
			ra.Throughput = append(ra.Throughput, ts[0])
			rb.Throughput = append(rb.Throughput, ts[1])
		}
		rep.A, rep.B = append(rep.A, ra), append(rep.B, rb)
	}
	for i, k := range a.InFlight {
		var va, vb, ratios []float64
		for r := range sch.Rounds {
			ta, tb := rep.A[r].Throughput[i], rep.B[r].Throughput[i]
			va = append(va, ta.SliceMedianCallsPerSec)
			vb = append(vb, tb.SliceMedianCallsPerSec)
			ratios = append(ratios, pairedRatio(ta, tb))
		}
		l := CompareLevel{Kind: "compare_throughput", LabelA: a.Label, LabelB: b.Label, InFlight: k,
			ACallsPerSec: medianFloat(va), BCallsPerSec: medianFloat(vb), RoundRatios: ratios}
		l.Ratio = medianFloat(ratios)
		l.RatioOfMedians = l.ACallsPerSec / l.BCallsPerSec
		rep.Levels = append(rep.Levels, l)
	}
	if len(coldA) > 0 {
		slices.Sort(coldA)
		slices.Sort(coldB)
		c := &CompareCold{Kind: "compare_cold_start", LabelA: a.Label, LabelB: b.Label, Runs: len(coldA),
			AMedianMS: ms(median(coldA)), BMedianMS: ms(median(coldB))}
		c.Ratio = c.AMedianMS / c.BMedianMS
		rep.Cold = c
	}
	return rep, nil
}

// interleave measures each of cfgs at k in flight. It starts procs warmed-up
// server processes per side, then makes each side's cfgs[0].Calls calls in
// nSlices slices. Slice i of every side goes to that side's process
// i mod procs, and the sides take turns in an order that reverses from one
// slice to the next (A B, B A, A B, ...), so that a burst of load from
// elsewhere on the machine falls on all sides alike and a steady drift
// favours none. A side's time is the sum of its slices' times; idle
// processes wait while others run.
func interleave(ctx context.Context, cfgs []Config, k, procs, nSlices int) ([]Throughput, error) {
	targets := make([][]*target, len(cfgs))
	defer func() {
		for _, ts := range targets {
			for _, t := range ts {
				t.close()
			}
		}
	}()
	for range procs {
		for side, cfg := range cfgs {
			t, err := openTarget(ctx, cfg, k)
			if err != nil {
				return nil, err
			}
			targets[side] = append(targets[side], t)
		}
	}
	calls := cfgs[0].Calls
	stats := make([]callStats, len(cfgs))
	order := make([]int, len(cfgs))
	for i := range nSlices {
		// Spread the calls over the slices, the remainder on the first ones.
		n := calls / nSlices
		if i < calls%nSlices {
			n++
		}
		for j := range order {
			order[j] = j
		}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, side := range order {
			t := targets[side][i%procs]
			st, err := t.run(ctx, n)
			if err != nil {
				return nil, err
			}
			stats[side].add(st)
			stats[side].sliceRates = append(stats[side].sliceRates, float64(st.calls)/st.elapsed.Seconds())
		}
	}
	out := make([]Throughput, len(cfgs))
	for side, cfg := range cfgs {
		out[side] = summarize(cfg, k, stats[side])
	}
	return out, nil
}
