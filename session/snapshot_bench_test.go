package session_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// benchStep and benchPlan look like the planning section's state: one
// immutable value holding every step.
type benchStep struct {
	ID     int
	Title  string
	Status string
}

type benchPlan struct {
	Objective string
	Steps     []benchStep
}

var benchPlanKey = session.NewKey[*benchPlan]("bench.plan")

// planSession returns a session whose plan slice holds one plan of n steps,
// next to a few small slices.
func planSession(tb testing.TB, n int) *session.Session {
	tb.Helper()
	steps := make([]benchStep, n)
	for i := range steps {
		steps[i] = benchStep{ID: i + 1, Title: "step", Status: "pending"}
	}
	s := newSession(tb, session.NewRegistry(), "bench")
	session.Set(s, benchPlanKey, &benchPlan{Objective: "ship", Steps: steps})
	session.Set(s, counter, 1)
	session.Set(s, label, "x")
	return s
}

// snapshotCall is what a failed call costs the session: a snapshot, a new
// plan value sharing the old steps, and a rollback.
func snapshotCall(tb testing.TB, s *session.Session) {
	tx, err := s.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	p, _ := session.Get(s, benchPlanKey)
	session.Set(s, benchPlanKey, &benchPlan{Objective: "changed", Steps: p.Steps})
	if err := tx.Rollback(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkSnapshot measures Begin + Rollback with a plan of 10, 10,000 and
// 1,000,000 steps. Because the plan is one immutable value, ns/op (and
// allocs/op) should be the same for every size.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := planSession(b, n)
			b.ReportAllocs()
			for b.Loop() {
				snapshotCall(b, s)
			}
			if p, _ := session.Get(s, benchPlanKey); p.Objective != "ship" || len(p.Steps) != n {
				b.Fatalf("rollback left plan %q with %d steps", p.Objective, len(p.Steps))
			}
		})
	}
}

// bytesPerRun returns the bytes f allocates per run, on average.
func bytesPerRun(runs int, f func()) float64 {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// TestSnapshotCostIndependentOfStateSize is the deterministic half of
// BenchmarkSnapshot: a snapshot and rollback allocate the same, in count
// and in bytes, whatever the size of the values the slices hold. (Copying
// the plan would cost at least 3 MB per call at 100,000 steps.)
func TestSnapshotCostIndependentOfStateSize(t *testing.T) {
	small := planSession(t, 10)
	large := planSession(t, 100_000)
	a := testing.AllocsPerRun(100, func() { snapshotCall(t, small) })
	b := testing.AllocsPerRun(100, func() { snapshotCall(t, large) })
	if a != b {
		t.Errorf("allocations per snapshot+rollback: %v with 10 steps, %v with 100,000; want equal", a, b)
	}
	sa := bytesPerRun(100, func() { snapshotCall(t, small) })
	sb := bytesPerRun(100, func() { snapshotCall(t, large) })
	if sb > sa+1024 {
		t.Errorf("bytes allocated per snapshot+rollback: %.0f with 10 steps, %.0f with 100,000; want about the same", sa, sb)
	}
	if p, _ := session.Get(large, benchPlanKey); p.Objective != "ship" || len(p.Steps) != 100_000 {
		t.Errorf("rollback left plan %q with %d steps", p.Objective, len(p.Steps))
	}
}
