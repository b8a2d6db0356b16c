package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// callLog keeps the sessions' call logs in the store: the record of every
// call of a session (its session.ToolInvoked as JSON, see logRecord),
// which the store retains up to its own limit (store.Options.LogRetention).
// Nothing of a call stays in this process's memory once its record is
// appended.
//
// Appending is off the call's path, and batched: add queues the record and
// returns; the first record queued for a session starts a goroutine that
// waits up to logLinger for more, then appends every record queued for
// the session in one write (store.Store.AppendLog, up to maxBatch bytes a
// write), and goes on until the queue is empty, then ends. A session that
// makes many calls costs the store a write every logLinger, not one a
// call. The records queued in all sessions take at most maxQueued bytes;
// add waits for room rather than drop one, and has the queues appended at
// once meanwhile. A record the store refuses is logged (Warn) and lost:
// its call has been answered.
// Reads (read, summaries, find) first have the records this process
// queued for the session appended, and wait for them, so that a client
// reads its own calls; another replica may show a call a moment later.
type callLog struct {
	store  store.Store
	logger *slog.Logger
	ctx    context.Context // of the appends, cancelled when closing takes too long
	stop   context.CancelFunc
	wait   time.Duration // how long close waits for the store: closeWait
	linger time.Duration // how long a record waits for others: logLinger

	mu     sync.Mutex
	room   *sync.Cond // signalled when queued falls or the log closes
	queued int        // bytes of the records queued in all sessions
	queues map[string]*logQueue
	closed bool
	wg     sync.WaitGroup // the appending goroutines
}

// logQueue holds the records of one session waiting to be appended.
type logQueue struct {
	records [][]byte
	now     chan struct{} // a token: append without waiting for more
	done    chan struct{} // closed when the queue is empty and its goroutine has ended
}

const (
	// maxQueued bounds the bytes of the records waiting to be appended.
	maxQueued = 8 << 20
	// maxBatch bounds the bytes of the records appended in one write,
	// beyond the first.
	maxBatch = 64 << 10
	// logLinger is how long the first record queued for a session waits
	// for others to be appended with it. A kill -9 loses the records
	// queued, so at most the calls of that long before it.
	logLinger = 20 * time.Millisecond
	// closeWait is how long close waits for the store to take the records
	// queued before it gives up on them.
	closeWait = 10 * time.Second
)

func newCallLog(st store.Store, logger *slog.Logger) *callLog {
	ctx, stop := context.WithCancel(context.Background())
	l := &callLog{store: st, logger: logger, ctx: ctx, stop: stop, wait: closeWait, linger: logLinger, queues: map[string]*logQueue{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

// add queues the record of a call of session h.
func (l *callLog) add(h string, ev *session.ToolInvoked) {
	rec, err := logRecord(ev)
	if err != nil {
		l.logger.Warn("recording a call in its session's log failed", "session", session.LogHandle(h), "call", ev.CallID, "err", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.queued > 0 && l.queued+len(rec) > maxQueued && !l.closed {
		for _, q := range l.queues {
			q.hurry()
		}
		l.room.Wait()
	}
	if l.closed {
		l.logger.Warn("a call ended after the server closed; it is not in its session's log", "session", session.LogHandle(h), "call", ev.CallID)
		return
	}
	q := l.queues[h]
	if q == nil {
		q = &logQueue{now: make(chan struct{}, 1), done: make(chan struct{})}
		l.queues[h] = q
		l.wg.Add(1)
		go l.drain(h, q)
	}
	q.records = append(q.records, rec)
	l.queued += len(rec)
}

// hurry has q's records appended without waiting for more.
func (q *logQueue) hurry() {
	select {
	case q.now <- struct{}{}:
	default:
	}
}

// drain appends the records of q, session h's queue, in batches, until it
// is empty.
func (l *callLog) drain(h string, q *logQueue) {
	defer l.wg.Done()
	t := time.NewTimer(l.linger)
	defer t.Stop()
	hurried := false // once hurried, the rest goes without waiting
	l.mu.Lock()
	for len(q.records) > 0 {
		l.mu.Unlock()
		if !hurried {
			select {
			case <-t.C:
			case <-q.now:
				hurried = true
			case <-l.ctx.Done():
			}
		}
		l.mu.Lock()
		n, size := 0, 0
		for n < len(q.records) && (n == 0 || size+len(q.records[n]) <= maxBatch) {
			size += len(q.records[n])
			n++
		}
		batch := q.records[:n:n] // held by batch alone from here
		q.records = q.records[n:]
		if len(q.records) == 0 {
			q.records = nil
		}
		l.mu.Unlock()
		err := l.store.AppendLog(l.ctx, h, batch...)
		l.mu.Lock()
		l.queued -= size
		lost := len(batch)
		if err != nil && l.ctx.Err() != nil {
			lost += l.discard(q) // closing, and the store does not keep up
		}
		l.room.Broadcast()
		if err != nil {
			l.mu.Unlock()
			l.logger.Warn("appending calls to their session's log in the store failed", "session", session.LogHandle(h), "lost", lost, "err", err)
			l.mu.Lock()
		}
		t.Reset(l.linger)
	}
	delete(l.queues, h)
	close(q.done)
	l.mu.Unlock()
}

// discard empties q and returns how many records it held. The caller holds
// l.mu.
func (l *callLog) discard(q *logQueue) int {
	n := len(q.records)
	for _, rec := range q.records {
		l.queued -= len(rec)
	}
	q.records = nil
	q.hurry()
	return n
}

// drop discards the records queued for session h, which is being deleted,
// and waits for the ones being appended, so that the deletion removes the
// session's whole log.
func (l *callLog) drop(h string) {
	l.mu.Lock()
	q := l.queues[h]
	if q != nil {
		l.discard(q)
		l.room.Broadcast()
	}
	l.mu.Unlock()
	if q != nil {
		<-q.done
	}
}

// flushed has the records queued for session h appended at once, and
// waits until they are, or ctx ends.
func (l *callLog) flushed(ctx context.Context, h string) error {
	l.mu.Lock()
	q := l.queues[h]
	if q != nil {
		q.hurry()
	}
	l.mu.Unlock()
	if q == nil {
		return nil
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read returns the last n records of session h's log that the store
// retains, oldest first.
func (l *callLog) read(ctx context.Context, h string, n int) ([][]byte, error) {
	if err := l.flushed(ctx, h); err != nil {
		return nil, err
	}
	recs, err := l.store.ReadLog(ctx, h, n)
	if err != nil {
		return nil, fmt.Errorf("reading the call log of session %s: %w", h, err)
	}
	return recs, nil
}

// summaries returns the summaries of the last n calls in session h's log,
// oldest first.
func (l *callLog) summaries(ctx context.Context, h string, n int) ([]session.CallSummary, error) {
	recs, err := l.read(ctx, h, n)
	if err != nil {
		return nil, err
	}
	out := make([]session.CallSummary, len(recs))
	for i, rec := range recs {
		var ev session.ToolInvoked
		if err := json.Unmarshal(rec, &ev); err != nil {
			return nil, fmt.Errorf("the call log of session %s: %w", h, err)
		}
		out[i] = session.Summarize(ev)
	}
	return out, nil
}

// find returns the record of call id in session h's log, indented, or
// ErrNoRecord.
func (l *callLog) find(ctx context.Context, h, id string) (string, error) {
	recs, err := l.read(ctx, h, math.MaxInt)
	if err != nil {
		return "", err
	}
	for _, rec := range recs {
		var call struct {
			ID string `json:"call_id"`
		}
		if json.Unmarshal(rec, &call) != nil || call.ID != id {
			continue
		}
		var b bytes.Buffer
		if err := json.Indent(&b, rec, "", "  "); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "", ErrNoRecord
}

// close waits for the records queued to be appended, for closeWait at
// most; past it, those left are dropped, with a warning. Records of calls
// that end later are dropped too.
func (l *callLog) close() {
	l.mu.Lock()
	l.closed = true
	for _, q := range l.queues {
		q.hurry()
	}
	l.room.Broadcast()
	l.mu.Unlock()
	t := time.AfterFunc(l.wait, l.stop)
	l.wg.Wait()
	t.Stop()
	l.stop()
}

// ErrNoRecord is the error of Find for a call that session's log does not
// hold.
var ErrNoRecord = errors.New("no such call in the session's log")

// logRecord returns the record of a call as its session's log keeps it:
// ev as JSON, in at most store.MaxValue bytes. The record of a call too
// large for that keeps the start of its arguments, value, text and message,
// each one longer than a limit cut to it (as a JSON string that ends with
// session.Cut's marker, which gives the full length); the limit halves
// from store.MaxValue until the record fits.
func logRecord(ev *session.ToolInvoked) ([]byte, error) {
	rec, err := json.Marshal(ev)
	if err != nil || len(rec) <= store.MaxValue {
		return rec, err
	}
	value, err := json.Marshal(ev.Value)
	if err != nil {
		return nil, err
	}
	for limit := store.MaxValue; limit > 0; limit /= 2 {
		c := *ev
		if len(c.Args) > limit {
			c.Args = jsonString(session.Cut(ev.Args, limit))
		}
		if len(value) > limit {
			c.Value = session.Cut(value, limit)
		}
		c.Text = session.Cut([]byte(ev.Text), limit)
		c.Message = session.Cut([]byte(ev.Message), limit)
		if rec, err = json.Marshal(c); err != nil || len(rec) <= store.MaxValue {
			return rec, err
		}
	}
	return nil, fmt.Errorf("the record does not fit in %d bytes", store.MaxValue)
}

// jsonString returns s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// Record queues the record of a call of session h for its log (callLog):
// it is appended off the call's path, with the records of the session's
// other calls.
func (m *Manager) Record(h string, ev *session.ToolInvoked) { m.calls.add(h, ev) }

// Summaries returns the summaries of the last n calls in session h's log,
// oldest first, the calls this process recorded included.
func (m *Manager) Summaries(ctx context.Context, h string, n int) ([]session.CallSummary, error) {
	return m.calls.summaries(ctx, h, n)
}

// Find returns the record of call id in session h's log, indented, or
// ErrNoRecord.
func (m *Manager) Find(ctx context.Context, h, id string) (string, error) {
	return m.calls.find(ctx, h, id)
}
