package transport

import "time"

// workerIdle is how long an idle worker waits for work before it exits.
const workerIdle = 30 * time.Second

// workers runs calls on reused goroutines. A call goes deep (mcp-go, the
// pipeline, the tool), so a fresh goroutine would grow and copy its stack
// on every call; a worker's stack stays grown. There is no bound: every
// call in flight has a worker, and workers idle for workerIdle exit.
type workers struct {
	work chan func()
}

// run runs fn on an idle worker, or on a new one.
func (w *workers) run(fn func()) {
	select {
	case w.queue() <- fn:
	default:
		go w.loop(fn)
	}
}

func (w *workers) queue() chan func() {
	return w.work
}

// loop runs fn, then whatever work comes, until idle for workerIdle.
func (w *workers) loop(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		t.Reset(workerIdle)
		select {
		case fn = <-w.work:
		case <-t.C:
			return
		}
	}
}
