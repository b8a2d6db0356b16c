package store

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// BenchmarkCommit commits a 300-byte head with one new 1 KB blob, the size
// of a small change to a session, and reports the median and 99th
// percentile of one commit, blob and head together.
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
		b.Run(bc.name, func(b *testing.B) {
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
			for i := uint64(0); b.Loop(); i++ {
				binary.LittleEndian.PutUint64(blob, i)
				binary.LittleEndian.PutUint64(head, i)
				start := time.Now()
				rev, err = s.Commit(ctx, "bench", rev, head, map[string][]byte{Hash(blob): blob})
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "µs-median")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "µs-p99")
		})
	}
}
