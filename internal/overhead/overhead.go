// Package overhead measures what one way of serving a call costs against
// another, for the benchmarks that report such ratios, and reports the
// ratios of their total times: wall-clock time and CPU time (user and
// system, every thread of the process, so that garbage collection and
// background work count).
//
// Three sources of error are taken out of the figure:
//   - Load from other processes, and the state of the machine, change
//     over seconds: the two are run in many short alternating rounds
//     within one run, so that both see the same.
//   - The one that runs second in a round finds the caches as the first
//     left them, and the one made second finds the heap as the first left
//     it: which one goes first alternates, from round to round and from
//     pair to pair.
//   - Two instances of the same server differ by a few percent (where
//     their objects landed in memory, their maps' hash seeds): the rounds
//     are spread over several fresh pairs of instances.
//
// Totals rather than a median of the rounds' ratios: a garbage collection
// cycle lasts about as long as a round and lands in one of them, so the
// rounds' ratios scatter widely and their median leaves the collector's
// work out; over many rounds each side is charged for the cycles its own
// allocation brought on.
package overhead

import (
	"syscall"
	"time"
)

// A Setup makes a fresh instance of one way of serving calls, ready to
// be measured, and returns the function that makes n calls on it. That
// function must finish all the work of its calls before it returns.
type Setup func() (calls func(n int))

// Compare makes pairs pairs of fresh instances of base and other, runs
// rounds rounds on each pair, a round making n calls on each instance,
// and returns the ratios other/base of their total wall-clock and CPU
// times.
func Compare(pairs, rounds, n int, base, other Setup) (wall, cpu float64, err error) {
	var total [2]struct{ wall, cpu float64 } // base's, other's
	for p := range pairs {
		var calls [2]func(int)
		if p%2 == 0 {
			calls[0], calls[1] = base(), other()
		} else {
			calls[1], calls[0] = other(), base()
		}
		for r := range rounds {
			for k := range 2 {
				i := (r + k) % 2 // base first in even rounds, other in odd
				w, c, err := measure(n, calls[i])
				if err != nil {
					return 0, 0, err
				}
				total[i].wall += w
				total[i].cpu += c
			}
		}
	}
	return total[1].wall / total[0].wall, total[1].cpu / total[0].cpu, nil
}

// measure runs f(n) and returns its wall-clock and CPU time.
func measure(n int, f func(int)) (wall, cpu float64, err error) {
	c0, err := cpuTime()
	if err != nil {
		return 0, 0, err
	}
	w0 := time.Now()
	f(n)
	w := time.Since(w0)
	c1, err := cpuTime()
	if err != nil {
		return 0, 0, err
	}
	return float64(w), float64(c1 - c0), nil
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
