package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"
)

func TestFinaliseRunsFinalisersInReverse(t *testing.T) {
	var order []string
	stage := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, call *Call) *Outcome {
				call.Finally(func(out *Outcome) { order = append(order, name+":"+string(out.Class)) })
				return next(ctx, call)
			}
		}
	}
	boom := func(context.Context, *Call) *Outcome { panic("boom") }
	call := &Call{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	out := Chain(Finalise, stage("a"), stage("b"))(boom)(context.Background(), call)
	if out.Class != ClassPanic || out.Message != "Tool '' failed: internal error" {
		t.Errorf("outcome %+v", out)
	}
	if want := []string{"b:panic", "a:panic"}; !slices.Equal(order, want) {
		t.Errorf("finalisers ran %v, want %v", order, want)
	}
}

// TestFinaliserPanics: a finaliser that panics does not stop the others.
func TestFinaliserPanics(t *testing.T) {
	ran := 0
	h := Finalise(func(ctx context.Context, call *Call) *Outcome {
		call.Finally(func(*Outcome) { ran++ })
		call.Finally(func(*Outcome) { panic("in a finaliser") })
		call.Finally(func(*Outcome) { ran++ })
		return &Outcome{Success: true}
	})
	out := h(context.Background(), &Call{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !out.Success || ran != 2 {
		t.Errorf("success %v, %d finalisers ran, want 2", out.Success, ran)
	}
}

func TestTransientAndClasses(t *testing.T) {
	base := errors.New("timed out")
	err := fmt.Errorf("calling upstream: %w", Transient(base))
	if !IsTransient(err) || !errors.Is(err, base) || err.Error() != "calling upstream: timed out" {
		t.Errorf("Transient: %v", err)
	}
	if IsTransient(base) || Transient(nil) != nil {
		t.Error("unmarked error is transient")
	}
	c := WithClass(ClassOutput, base)
	if ClassOf(fmt.Errorf("x: %w", c), ClassError) != ClassOutput || ClassOf(base, ClassError) != ClassError || !errors.Is(c, base) {
		t.Error("WithClass")
	}
}

func TestRetryAfterCloneSetText(t *testing.T) {
	o := RetryAfter(ClassRateLimited, "Later.", 1200*time.Millisecond+time.Microsecond)
	if o.Meta[MetaRetryAfterMs] != int64(1201) || o.Success || o.Text() != "Later." {
		t.Errorf("RetryAfter: %+v", o)
	}
	c := o.Clone()
	c.Meta[MetaRetryAfterMs] = 0
	c.SetText("changed")
	if o.Meta[MetaRetryAfterMs] != int64(1201) || o.Text() != "Later." || c.Text() != "changed" {
		t.Error("Clone shares what it should not")
	}
}
