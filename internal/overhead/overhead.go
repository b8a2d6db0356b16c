// Package overhead measures what one way of serving a call costs against
// another, for the benchmarks that report such ratios. The two are run in
// many short alternating rounds within one run, so that both see the same
// load from other processes and the same state of the machine, and the
// ratios of their total times are reported: wall-clock time and CPU time
// (user and system, every thread of the process, so that garbage
// collection and background work count).
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

// Compare runs rounds rounds of base(n) then other(n), each making n calls,
// and returns the ratios other/base of their total wall-clock and CPU
// times. A function must finish all the work of its calls before it
// returns.
func Compare(rounds, n int, base, other func(n int)) (wall, cpu float64, err error) {
	var bw, bc, ow, oc float64
	for range rounds {
		w, c, err := measure(n, base)
		if err != nil {
			return 0, 0, err
		}
		bw, bc = bw+w, bc+c
		if w, c, err = measure(n, other); err != nil {
			return 0, 0, err
		}
		ow, oc = ow+w, oc+c
	}
	return ow / bw, oc / bc, nil
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
