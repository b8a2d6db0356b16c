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
			s, rev := benchSession(b, Options{Dormancy: time.Hour})
			var err error
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

// BenchmarkWrite1K compares a file's content stored as a located blob
// (PutData of one 1 KB content) with one stored as a content-addressed
// blob (Commit of a 300-byte head with one 1 KB blob, beside Commit of
// the head alone), on an embedded store, as the CPU time of the process
// (the server's included) per operation.
func BenchmarkWrite1K(b *testing.B) {
	for _, op := range []string{"commit-head", "commit-head+blob", "putdata"} {
		b.Run(op, func(b *testing.B) {
			ctx := context.Background()
			s, rev := benchSession(b, Options{})
			head, content := make([]byte, 300), make([]byte, 1024)
			cpu := cpuTime()
			for i := uint64(0); b.Loop(); i++ {
				binary.LittleEndian.PutUint64(head, i)
				binary.LittleEndian.PutUint64(content, i)
				var err error
				switch op {
				case "commit-head":
					rev, err = s.Commit(ctx, "bench", rev, head, nil)
				case "commit-head+blob":
					rev, err = s.Commit(ctx, "bench", rev, head, map[string][]byte{Hash(content): content})
				default:
					_, err = s.PutData(ctx, "bench", [][]byte{content})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkReopen measures a restart of an embedded store (OpenEmbedded
// on the dir of a store just closed) whose state stream holds one session
// of 105,000 blobs of 256 bytes: all content-addressed (a subject each),
// or 100,000 located (one subject) and 5,000 content-addressed; and, for
// a base, one of an empty session. Each iteration opens and closes the
// store; the figure is the median time of an opening (ms-median) and the
// CPU time of the process per opening.
func BenchmarkReopen(b *testing.B) {
	for _, bc := range []struct{ located, total int }{{0, 0}, {0, 105_000}, {100_000, 105_000}} {
		located, total := bc.located, bc.total
		b.Run(fmt.Sprintf("located=%d/addressed=%d", located, total-located), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			s, err := OpenEmbedded(ctx, dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			rev, err := s.Create(ctx, "bench", nil)
			if err != nil {
				b.Fatal(err)
			}
			content := func(i int) []byte {
				v := make([]byte, 256)
				binary.LittleEndian.PutUint64(v, uint64(i))
				return v
			}
			for i := 0; i < located; i += 1000 {
				var batch [][]byte
				for j := i; j < min(i+1000, located); j++ {
					batch = append(batch, content(j))
				}
				if _, err := s.PutData(ctx, "bench", batch); err != nil {
					b.Fatal(err)
				}
			}
			for i := located; i < total; i += 1000 {
				batch := map[string][]byte{}
				for j := i; j < min(i+1000, total); j++ {
					v := content(j)
					batch[Hash(v)] = v
				}
				if rev, err = s.Commit(ctx, "bench", rev, []byte("head"), batch); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			var took []time.Duration
			var cpu time.Duration
			for b.Loop() {
				c, start := cpuTime(), time.Now()
				s, err := OpenEmbedded(ctx, dir, Options{})
				took = append(took, time.Since(start))
				cpu += cpuTime() - c
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "ms-median")
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(len(took)), "cpu-ms/open")
		})
	}
}

// benchSession opens an embedded store of opts in a directory of b's,
// closed when b ends, and creates the session "bench" in it.
func benchSession(b *testing.B, opts Options) (*JetStream, uint64) {
	b.Helper()
	ctx := context.Background()
	s, err := OpenEmbedded(ctx, b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	rev, err := s.Create(ctx, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	return s, rev
}
