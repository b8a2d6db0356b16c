package session

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestAttach(t *testing.T) {
	r := NewRegistry()
	s, err := r.NewSession("a")
	if err != nil {
		t.Fatal(err)
	}
	k := NewResourceKey[*int]("test.counter")
	var made atomic.Int32
	var wg sync.WaitGroup
	got := make([]*int, 20)
	for i := range got {
		wg.Go(func() {
			got[i] = Attach(s, k, func() *int { made.Add(1); return new(int) })
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Errorf("created %d times, want once", made.Load())
	}
	for _, p := range got {
		if p != got[0] {
			t.Fatal("different values for one session")
		}
	}
	if v, ok := Resource(s, k); !ok || v != got[0] {
		t.Error("Resource does not find the attached value")
	}
	other, _ := r.NewSession("b")
	if _, ok := Resource(other, k); ok {
		t.Error("attached to another session")
	}
	// A transaction does not restore it.
	tx, _ := s.Begin()
	*got[0] = 5
	_ = tx.Rollback()
	if v, _ := Resource(s, k); *v != 5 {
		t.Error("rolled back")
	}
}
