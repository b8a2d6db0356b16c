//go:build linux

package sessions

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time the calling thread has used so far.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommitPaired measures what the history adds to a commit of a
// plan-sized slice as the CPU time of the committing thread (the store's
// goroutines, and the collector's, are not counted): the commits of a
// manager without the history and of one with it alternate, 100 at a
// time, so that the load of a shared machine falls on both alike. It
// reports the CPU time a commit takes without the history (off-µs) and
// what the history adds to it (history-µs).
func BenchmarkCommitPaired(b *testing.B) {
	for _, name := range []string{"memory", "embedded"} {
		b.Run("store="+name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			type side struct {
				u   *Use
				cpu time.Duration
			}
			off, on := &side{u: planSession(b, name, 0)}, &side{u: planSession(b, name, 20)}
			const batch = 100
			n := 0
			for b.Loop() {
				for _, s := range []*side{off, on} {
					c0 := threadCPU(b)
					for range batch {
						n++
						commitPlan(b, s.u, n)
					}
					s.cpu += threadCPU(b) - c0
				}
			}
			commits := float64(b.N * batch)
			b.ReportMetric(float64(off.cpu.Microseconds())/commits, "off-µs")
			b.ReportMetric(float64((on.cpu-off.cpu).Microseconds())/commits, "history-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
