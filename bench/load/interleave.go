package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// With --interleave N, the sides are measured together rather than one
// after the other: in each round, at each level, every side's fresh server
// is started and warmed up, then the sides take turns of N calls each
// (A, B, then B, A, ...: the order reverses from one turn to the next)
// until each has made --calls. The CPU time of every server is read at
// the ends of each turn, so that what a side's server does after its
// calls have been answered (its store's writes to disk, its collections)
// falls in the turn that caused it. A side's CPU per call in a turn is
// compared with the baseline's in the same turn, under the same load of
// the machine; the report gives the median of these ratios over the
// turns of all rounds, with their quartiles, so that drift on a shared
// machine moves both sides of a ratio alike rather than the ratio.

// turn is what a side did in one turn of --interleave.
type turn struct {
	calls   int
	cpu     time.Duration // the CPU time of the side's processes over the turn
	elapsed time.Duration // the time its calls took
}

// interleaved is the measurement of every side at one level, over all
// rounds: turns[side] holds each turn in order, rss[side] the peak RSS of
// each round's server.
type interleaved struct {
	turns [][]turn
	rss   [][]int64
}

// measureInterleaved measures the sides of cfg together at level c, in
// turns of cfg.interleave calls, for one round, and adds to m.
func measureInterleaved(ctx context.Context, cfg config, c int, m *interleaved) error {
	ws := make([]*warm, len(cfg.sides))
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.close()
			}
		}
	}()
	for i, s := range cfg.sides {
		w, err := start(ctx, cfg, s, c)
		ws[i] = w
		if err != nil {
			return fmt.Errorf("side %s: %w", s.name, err)
		}
	}
	order := make([]int, len(ws))
	cpu := make([]time.Duration, len(ws))
	for i, w := range ws {
		cpu[i] = w.cpu()
	}
	for k, done := 0, 0; done < cfg.calls; k++ {
		n := min(cfg.interleave, cfg.calls-done)
		for i := range order {
			order[i] = i
		}
		if k%2 == 1 {
			slices.Reverse(order)
		}
		elapsed := make([]time.Duration, len(ws))
		for _, i := range order {
			_, t, err := calls(ctx, ws[i].srv.clients, ws[i].params, c, n)
			if err != nil {
				return fmt.Errorf("side %s: %w", cfg.sides[i].name, ws[i].srv.explain(err))
			}
			elapsed[i] = t
		}
		for i, w := range ws {
			now := w.cpu()
			m.turns[i] = append(m.turns[i], turn{calls: n, cpu: now - cpu[i], elapsed: elapsed[i]})
			cpu[i] = now
		}
		done += n
	}
	for i, w := range ws {
		m.rss[i] = append(m.rss[i], w.srv.peakRSS())
	}
	return nil
}

// measureAllInterleaved measures every side at every level in every
// round, with --interleave; the result is indexed by level.
func measureAllInterleaved(ctx context.Context, cfg config) ([]interleaved, error) {
	ms := make([]interleaved, len(cfg.levels))
	for l := range ms {
		ms[l] = interleaved{turns: make([][]turn, len(cfg.sides)), rss: make([][]int64, len(cfg.sides))}
	}
	for r := range cfg.rounds {
		for l, c := range cfg.levels {
			if err := measureInterleaved(ctx, cfg, c, &ms[l]); err != nil {
				return nil, fmt.Errorf("in-flight %d, round %d: %w", c, r+1, err)
			}
		}
	}
	return ms, nil
}

// reportInterleaved prints a table per level: for each side, its calls
// per second and CPU per call over all its turns, and the median and
// quartiles over the turns of its CPU per call over the baseline's.
func reportInterleaved(w io.Writer, cfg config, ms []interleaved) {
	fmt.Fprintf(w, "%s, %d rounds of %d calls per side and level, interleaved in turns of %d calls", cfg.transport, cfg.rounds, cfg.calls, cfg.interleave)
	if cfg.transport == "http" {
		fmt.Fprintf(w, " over %d session(s) per server", cfg.sessions)
	}
	fmt.Fprintln(w)
	for l, c := range cfg.levels {
		m := ms[l]
		fmt.Fprintf(w, "\nin-flight %d, %d turns\n", c, len(m.turns[0]))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "side\tcalls/s\tCPU µs/call\tCPU ratio\tquartiles\tof totals\tpeak RSS MiB\t")
		base := total(m.turns[0])
		for i, s := range cfg.sides {
			t := total(m.turns[i])
			var ratios []float64
			for k, tn := range m.turns[i] {
				b := m.turns[0][k]
				if b.cpu > 0 && tn.calls > 0 {
					ratios = append(ratios, float64(tn.cpu)/float64(tn.calls)/(float64(b.cpu)/float64(b.calls)))
				}
			}
			var rss []float64
			for _, v := range m.rss[i] {
				rss = append(rss, float64(v)/1024)
			}
			q1, q2, q3 := quartiles(ratios)
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.3f\t%.3f-%.3f\t%.3f\t%s\t\n", s.name,
				float64(t.calls)/t.elapsed.Seconds(),
				known(float64(t.cpu)/float64(t.calls)/1e3, "%.1f"),
				q2, q1, q3,
				float64(t.cpu)/float64(t.calls)/(float64(base.cpu)/float64(base.calls)),
				known(median(rss), "%.1f"))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w, "\nCPU ratio: the side's CPU per call over the first side's in the same turn, median and quartiles over turns; of totals: over all turns")
}

// total sums turns.
func total(turns []turn) turn {
	var t turn
	for _, tn := range turns {
		t.calls += tn.calls
		t.cpu += tn.cpu
		t.elapsed += tn.elapsed
	}
	return t
}

// quartiles returns the first quartile, the median and the third quartile
// of values (each the median of its half, the middle value left out of
// both halves for an odd number); NaN for none.
func quartiles(values []float64) (q1, q2, q3 float64) {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	if n == 1 {
		return s[0], s[0], s[0]
	}
	return median(s[:n/2]), median(s), median(s[(n+1)/2:])
}
