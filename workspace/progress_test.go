package workspace

import (
	"context"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// countingNotifier counts progress notifications.
type countingNotifier struct{ sent []float64 }

func (n *countingNotifier) Progress(_ context.Context, progress, _ float64, _ string) error {
	n.sent = append(n.sent, progress)
	return nil
}

func (n *countingNotifier) Log(context.Context, string, any) error { return nil }

// TestProgressIsRateBound: the first step is reported, then at most one
// step every progressInterval, with a rising count.
func TestProgressIsRateBound(t *testing.T) {
	n := &countingNotifier{}
	p := progress{ctx: tools.NewContext(context.Background(), &tools.Call{Notifier: n})}
	start := time.Now()
	for time.Since(start) < 3*progressInterval {
		p.step(func() string { return "step" })
	}
	elapsed := time.Since(start)
	if max := 1 + int(elapsed/progressInterval); len(n.sent) < 2 || len(n.sent) > max {
		t.Errorf("%d notifications for %d steps in %v, want 2 to %d", len(n.sent), p.steps, elapsed, max)
	}
	if n.sent[0] != 1 {
		t.Errorf("first notification at step %v, want 1", n.sent[0])
	}
	for i := 1; i < len(n.sent); i++ {
		if n.sent[i] <= n.sent[i-1] {
			t.Errorf("progress does not rise: %v", n.sent)
		}
	}
}
