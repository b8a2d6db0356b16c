package statetree_test

import (
	"runtime"
	"testing"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// BenchmarkIndexWhole measures an Index built whole from the state of a
// 100,000-file workspace (100 directories of 1,000), as a sweep's first
// Update does; heap-B is the heap the built Index holds.
func BenchmarkIndexWhole(b *testing.B) {
	r := newRegistry(b, bigWorkspace(100, 1000, 64))
	s := newSession(b, r)
	st, nb := encode(b, s, nil)
	bs := newBlobs()
	bs.add(nb)
	get := withDoc(st.Doc, bs.get)
	roots := []statetree.Root{statetree.DocRoot(st.Root)}
	b.ReportAllocs()
	var x *statetree.Index
	for b.Loop() {
		x = statetree.NewIndex()
		if _, err := x.Update(roots, get); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// The heap with the last Index built, and without it.
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	b.ReportMetric(float64(x.Len()), "blobs")
	runtime.KeepAlive(x)
	x = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(with.HeapAlloc)-float64(without.HeapAlloc), "heap-B")
	runtime.KeepAlive(bs)
}
