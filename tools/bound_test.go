package tools

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// bounder answers overrunning calls into answers, and records what
// returned late.
type bounder struct {
	can      bool
	answers  chan *Outcome
	mu       sync.Mutex
	returned []string
}

func (b *bounder) Answerer(context.Context) func(*Call, *Outcome) {
	if !b.can {
		return nil
	}
	return func(_ *Call, out *Outcome) { b.answers <- out }
}

func (b *bounder) Overrun(_ context.Context, call *Call) *Outcome {
	return Failure(ClassDeadline, "overran "+call.ID)
}

func (b *bounder) Returned(call *Call, out *Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.returned = append(b.returned, call.ID+": "+out.Message)
}

// TestBound: a call that returns in time is answered by its pipeline, on
// the caller's goroutine, with no other started; one that ignores its
// context is answered grace after it ended, through the bounder, its
// overrun hooks run first, and once it returns at last the bounder hears
// it and Overran says so.
func TestBound(t *testing.T) {
	b := &bounder{can: true, answers: make(chan *Outcome, 1)}
	stuck := make(chan struct{})
	var during int
	h := Bound(10*time.Millisecond, b)(func(ctx context.Context, call *Call) *Outcome {
		if call.ID == "deaf" {
			<-stuck
		} else {
			during = runtime.NumGoroutine()
		}
		return Failure(ClassError, "returned")
	})

	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	quick := &Call{ID: "quick"}
	if out := h(ctx, quick); out.Message != "returned" || quick.Overran() {
		t.Fatalf("quick call: %q, overran %v", out.Message, quick.Overran())
	}
	cancel()
	if during != before {
		t.Errorf("%d goroutines during a call, %d before", during, before)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	deaf := &Call{ID: "deaf"}
	var hooked []string
	deaf.OnOverrun(func(out *Outcome) { hooked = append(hooked, "first "+out.Message) })
	deaf.OnOverrun(func(out *Outcome) { hooked = append(hooked, "second") })
	returned := make(chan *Outcome)
	go func() { returned <- h(ctx, deaf) }()
	out := <-b.answers
	if out.Message != "overran deaf" || !deaf.Overran() {
		t.Fatalf("answered %q, overran %v", out.Message, deaf.Overran())
	}
	if len(hooked) != 2 || hooked[0] != "second" || hooked[1] != "first overran deaf" {
		t.Errorf("overrun hooks ran %q, want the last registered first, before the answer", hooked)
	}
	close(stuck)
	if out := <-returned; out.Message != "returned" {
		t.Errorf("the pipeline returned %q", out.Message)
	}
	if len(b.returned) != 1 || b.returned[0] != "deaf: returned" {
		t.Errorf("the bounder heard %q", b.returned)
	}
}

// TestBoundWithoutAnswerer: a call that cannot be answered without its
// pipeline is not bounded.
func TestBoundWithoutAnswerer(t *testing.T) {
	b := &bounder{}
	h := Bound(time.Millisecond, b)(func(ctx context.Context, call *Call) *Outcome {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond)
		return Failure(ClassError, "returned")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	call := &Call{ID: "c"}
	if out := h(ctx, call); out.Message != "returned" || call.Overran() {
		t.Fatalf("%q, overran %v", out.Message, call.Overran())
	}
}
