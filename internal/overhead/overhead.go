// Package overhead measures what one way of serving a call costs against
// another, for the benchmarks that report such ratios. The two are run in
// many short alternating rounds within one run, so that both see the same
// load from other processes and the same state of the machine, and the
// medians of the rounds' ratios are reported: wall-clock time and CPU time
// (user and system, every thread of the process, so that garbage
// collection and background work count).
package overhead

import (
	"slices"
	"syscall"
	"time"
)

// Compare runs rounds rounds of base(n) then other(n), each making n calls,
// and returns the medians of the rounds' ratios other/base of wall-clock
// and of CPU time. A function must finish all the work of its calls before
// it returns.
func Compare(rounds, n int, base, other func(n int)) (wall, cpu float64, err error) {
	var walls, cpus []float64
	for range rounds {
		bw, bc, err := measure(n, base)
		if err != nil {
			return 0, 0, err
		}
		ow, oc, err := measure(n, other)
		if err != nil {
			return 0, 0, err
		}
		walls, cpus = append(walls, ow/bw), append(cpus, oc/bc)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return walls[rounds/2], cpus[rounds/2], nil
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
