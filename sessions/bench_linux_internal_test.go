//go:build linux

package sessions

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
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
			ctx := context.Background()
			type side struct {
				u   *Use
				k   session.Key[string]
				cpu time.Duration
			}
			open := func(retention int) *side {
				r := session.NewRegistry()
				k := session.NewKey[string]("plan")
				session.Persist(r, k, session.Codec[string]{
					Marshal:   func(v string) ([]byte, error) { return []byte(v), nil },
					Unmarshal: func(b []byte) (string, error) { return string(b), nil },
					Text:      func(v string) string { return v },
				})
				var st store.Store = store.NewMemory(store.Options{})
				if name == "embedded" {
					es, err := store.OpenEmbedded(ctx, b.TempDir(), store.Options{})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { es.Close() })
					st = es
				}
				m := newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, History: retention})
				b.Cleanup(m.Close)
				u, err := m.Use(ctx, Request{Need: NeedNew})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(u.Release)
				return &side{u: u, k: k}
			}
			off, on := open(0), open(20)
			const batch = 100
			n := 0
			for b.Loop() {
				for _, s := range []*side{off, on} {
					c0 := threadCPU(b)
					for range batch {
						n++
						tx, err := s.u.Session.Begin()
						if err != nil {
							b.Fatal(err)
						}
						session.Set(s.u.Session, s.k, fmt.Sprintf("Objective: bench %d\nStatus: active\n\n1 [pending] a\n2 [pending] b\n3 [pending] c\n", n))
						if err := s.u.Commit(ctx, &Commit{CallID: fmt.Sprint(n), Tool: "planning_setup_plan", Tx: tx}); err != nil {
							b.Fatal(err)
						}
						tx.Commit()
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
