package tools

import (
	"context"
	"testing"
	"time"
)

// TestBound: a call that returns is joined, with what the rest of the
// pipeline set on it and its finalisers run; a call that ignores its
// context is answered by overrun, and done closes when it returns.
func TestBound(t *testing.T) {
	stuck := make(chan struct{})
	var overran <-chan struct{}
	stage := Bound(10*time.Millisecond, func(_ context.Context, call *Call, done <-chan struct{}) *Outcome {
		overran = done
		return Failure(ClassDeadline, "overran")
	})
	finalised := 0
	h := stage(func(ctx context.Context, call *Call) *Outcome {
		call.Finally(func(*Outcome) { finalised++ })
		call.Params = "set"
		if call.ID == "deaf" {
			<-stuck
		}
		return Failure(ClassError, "returned")
	})
	tests := []struct {
		id, want string
	}{
		{"quick", "returned"},
		{"deaf", "overran"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			call := &Call{ID: tt.id}
			if out := h(ctx, call); out.Message != tt.want {
				t.Fatalf("outcome %q, want %q", out.Message, tt.want)
			}
			if joined := call.Params == "set"; joined != (tt.want == "returned") {
				t.Errorf("Params %v: joined %v", call.Params, joined)
			}
		})
	}
	if finalised != 1 {
		t.Errorf("%d finalisers ran before the deaf call returned, want 1", finalised)
	}
	close(stuck)
	<-overran
	if finalised != 2 {
		t.Errorf("%d finalisers ran, want 2", finalised)
	}
}
