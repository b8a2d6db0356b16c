//go:build unix

package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommit commits a 300-byte head alone (a plan change, whose
// state travels in the head) and with one new 1 KB blob (a small file),
// and reports the median and 99th percentile of one commit and the CPU
// time of the process (the embedded server's included) per commit, which
// getrusage(2) gives: hence unix only.
func BenchmarkCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		open func(b *testing.B) (Store, error)
	}{
		{"memory", func(b *testing.B) (Store, error) { return NewMemory(Options{}), nil }},
		{"embedded", func(b *testing.B) (Store, error) {
			return OpenEmbedded(context.Background(), b.TempDir(), Options{})
		}},
		{"embedded-sync-always", func(b *testing.B) (Store, error) {
			return OpenEmbedded(context.Background(), b.TempDir(), Options{SyncAlways: true})
		}},
		{"cluster-r3", func(b *testing.B) (Store, error) {
			return Connect(context.Background(), sharedCluster(b).URLs(), Options{Replicas: 3, Name: storeName("bench")})
		}},
	} {
		for _, withBlob := range []bool{false, true} {
			name := bc.name + "/head"
			if withBlob {
				name += "+blob"
			}
			b.Run(name, func(b *testing.B) {
				s, err := bc.open(b)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ctx := context.Background()
				rev, err := s.Create(ctx, "bench", nil)
				if err != nil {
					b.Fatal(err)
				}
				head, blob := make([]byte, 300), make([]byte, 1024)
				var took []time.Duration
				cpu := cpuTime()
				for i := uint64(0); b.Loop(); i++ {
					binary.LittleEndian.PutUint64(head, i)
					var blobs map[string][]byte
					if withBlob {
						binary.LittleEndian.PutUint64(blob, i)
						blobs = map[string][]byte{Hash(blob): blob}
					}
					start := time.Now()
					rev, err = s.Commit(ctx, "bench", rev, head, blobs)
					took = append(took, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
				}
				cpu = cpuTime() - cpu
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "µs-median")
				b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "µs-p99")
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(len(took)), "cpu-µs/op")
			})
		}
	}
}

// BenchmarkWake measures what the first call after dormancy pays: each
// iteration makes the holder of a state dir dormant, then loads a head,
// which starts the server again on the dir's files. The stores hold one
// session with blobs of 4 KB, from none to 100,000 (400 MB); the figure
// is the time of the load (ns/op), and the CPU time of the process per
// wake (cpu-ms/wake).
func BenchmarkWake(b *testing.B) {
	for _, blobs := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("blobs=%d", blobs), func(b *testing.B) {
			ctx := context.Background()
			s, err := OpenEmbedded(ctx, b.TempDir(), Options{Dormancy: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rev, err := s.Create(ctx, "bench", nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < blobs; i += 1000 {
				batch := map[string][]byte{}
				for j := i; j < min(i+1000, blobs); j++ {
					v := make([]byte, 4096)
					binary.LittleEndian.PutUint64(v, uint64(j))
					batch[Hash(v)] = v
				}
				if rev, err = s.Commit(ctx, "bench", rev, []byte("head"), batch); err != nil {
					b.Fatal(err)
				}
			}
			var cpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				s.host.last.Store(0)
				s.host.sleep()
				if !s.host.dormant.Load() {
					b.Fatal("the holder did not go dormant")
				}
				c := cpuTime()
				b.StartTimer()
				if _, err := s.Load(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - c
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/wake")
		})
	}
}
