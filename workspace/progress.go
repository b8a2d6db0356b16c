package workspace

import (
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// progressInterval is the least time between two progress notifications
// of one call.
const progressInterval = 100 * time.Millisecond

// progress sends a long call's notifications/progress, when the client
// asked for them: the first at the first step, then at most one every
// progressInterval, however many steps there are.
type progress struct {
	ctx   *tools.Context
	steps int
	last  time.Time
}

// step counts one more step of the call's work (a file visited) and
// reports the count, with the message msg returns, when it is time to.
// A notification that cannot be sent is dropped: progress is advice, and
// the call's context says when to stop.
func (p *progress) step(msg func() string) {
	p.steps++
	if now := time.Now(); p.steps == 1 || now.Sub(p.last) >= progressInterval {
		p.last = now
		_ = p.ctx.Progress(float64(p.steps), 0, msg())
	}
}
