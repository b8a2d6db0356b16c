package hooks

import (
	"context"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// DeadlineConfig sets the deadline the deadline reminder counts down to:
// the earlier of At and Session after the session began. Within is how
// near it must be for the reminder to appear (Defaults: DefaultWithin;
// zero: only once it has passed).
type DeadlineConfig struct {
	At      time.Time     `json:"at" jsonschema:"A wall-clock deadline, as an RFC 3339 time such as 2026-11-25T17:00:00Z." schema:"format=date-time"`
	Session time.Duration `json:"session" jsonschema:"A deadline this long after each session began (in this process: after a restart, after it was resumed)." schema:"format=go-duration"`
	Within  time.Duration `json:"within" jsonschema:"How near the deadline must be for the reminder to appear." schema:"format=go-duration"`
}

// checkDeadline reports the deadline reminder's settings out of range.
func checkDeadline(c DeadlineConfig, bad func(key, format string, args ...any)) {
	if c.Session < 0 {
		bad("deadline_reminder.session", "must not be negative, got %s", c.Session)
	}
	if c.Within < 0 {
		bad("deadline_reminder.within", "must not be negative, got %s", c.Within)
	}
}

// DeadlineReminder returns the deadline reminder (the stage
// deadline_reminder): once a call is over, when the deadline is less than
// Within away, it adds a text block to the result, such as
//
//	12 minutes to the deadline (2026-11-25T17:00:00Z).
//
// or, once it has passed, "The deadline (…) has passed." Nil when no
// deadline is set.
func (h *Hooks) DeadlineReminder() tools.Middleware {
	c := h.cfg.DeadlineReminder
	if c.At.IsZero() && c.Session <= 0 {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			out := next(ctx, call)
			deadline := c.At
			if c.Session > 0 && call.Session != nil {
				if d := call.Session.Created().Add(c.Session); deadline.IsZero() || d.Before(deadline) {
					deadline = d
				}
			}
			if left := deadline.Sub(h.now()); left < c.Within {
				out.AddFeedback(remaining(left, deadline))
			}
			return out
		}
	}
}

// remaining says how long is left to deadline.
func remaining(left time.Duration, deadline time.Time) string {
	at := deadline.UTC().Format(time.RFC3339)
	switch {
	case left <= 0:
		return fmt.Sprintf("The deadline (%s) has passed.", at)
	case left < time.Minute:
		return fmt.Sprintf("Less than a minute to the deadline (%s).", at)
	}
	n := int((left + time.Minute - 1) / time.Minute)
	return fmt.Sprintf("%s to the deadline (%s).", plural(n, "minute", "minutes"), at)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
