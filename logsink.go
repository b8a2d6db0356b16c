package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushInterval bounds how long a log line may wait in the buffer.
const logFlushInterval = 50 * time.Millisecond

// logSink batches log lines on their way to stderr. With an audit line per
// call, writing each line at once costs a system call per call; batching
// them costs one per flush. Lines reach the writer within
// logFlushInterval, at once for warnings and errors (see flushHandler), and
// on Close. A process that crashes loses at most the last interval's info
// lines; Go's own crash report goes straight to the file descriptor.
type logSink struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	pending bool // a flush is scheduled
}

func newLogSink(w io.Writer) *logSink { return &logSink{w: w} }

// Write buffers p, which slog handlers hand over one whole line at a time.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	switch {
	case len(s.buf) >= 64<<10:
		s.flushLocked()
	case !s.pending:
		s.pending = true
		time.AfterFunc(logFlushInterval, s.Flush)
	}
	return len(p), nil
}

// Flush writes what is buffered.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *logSink) flushLocked() {
	s.pending = false
	if len(s.buf) == 0 {
		return
	}
	_, _ = s.w.Write(s.buf)
	s.buf = s.buf[:0]
}

// flushHandler flushes the sink after every record at warning level or
// above, so that problems are never held back.
type flushHandler struct {
	slog.Handler
	sink *logSink
}

// Handle passes the record on, then flushes for warnings and errors.
func (h flushHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.sink.Flush()
	}
	return err
}

// WithAttrs keeps flushing on the derived handler.
func (h flushHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return flushHandler{Handler: h.Handler.WithAttrs(as), sink: h.sink}
}

// WithGroup keeps flushing on the derived handler.
func (h flushHandler) WithGroup(name string) slog.Handler {
	return flushHandler{Handler: h.Handler.WithGroup(name), sink: h.sink}
}
