package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// auditor writes audit records to the sinks: a line in the log, a line in
// the file.
//
// A call hands its record over and returns; a writer goroutine writes the
// records a batch at a time, at most flushDelay after the first of them
// was taken, in the order taken. A crash of the server loses at most the
// records of that last moment, never an earlier one. With FsyncAlways the
// call writes its record itself, and syncs the file, before it returns.
// When the writer falls behind by maxPending records, calls write the
// batch themselves.
type auditor struct {
	handler slog.Handler // the log's, or nil when not logging
	logger  *slog.Logger // for the auditor's own errors
	file    *auditFile   // nil when there is no file
	fsync   Fsync

	mu      sync.Mutex // guards pending, spare and closed
	pending []auditEntry
	spare   []auditEntry // the slice pending is swapped with
	closed  bool

	wmu         sync.Mutex    // one batch is written at a time; guards the rest
	line        []byte        // the batch's lines, reused
	lastSession string        // the session lastHandler is for
	lastHandler slog.Handler  // handler with the session attribute bound
	value       bytes.Buffer  // a value's encoding, reused
	enc         *json.Encoder // encodes values into value

	wake chan struct{} // a batch was started
	stop chan struct{}
	done chan struct{}
}

// auditEntry is a record waiting to be written: what the call knows of it
// (the event the session's log holds, which no one changes) and nothing
// copied that need not be.
type auditEntry struct {
	ctx     context.Context // the call's, for the log handler
	time    time.Time
	session string
	inv     *session.ToolInvoked // its arguments redacted already
	subject string
	scopes  []string
	err     string // the Go error, redacted
	value   []byte // the encoding of inv.Value, when the call made it
}

// record returns the entry's audit record.
func (e *auditEntry) record() AuditRecord {
	return AuditRecord{Time: e.time, Session: e.session, Subject: e.subject, Scopes: e.scopes, ToolInvoked: *e.inv, Error: e.err}
}

const (
	// flushDelay is how long a record may wait to be written with those
	// that follow it.
	flushDelay = 2 * time.Millisecond
	// maxPending is how far the writer may fall behind before calls
	// write for themselves.
	maxPending = 4096
	// syncInterval is how often FsyncInterval syncs, when records were
	// written.
	syncInterval = time.Second
)

// newAuditor opens the sinks cfg asks for, or returns nil when it asks for
// none.
func newAuditor(cfg AuditConfig, logger *slog.Logger) (*auditor, error) {
	if !cfg.Log && cfg.File == "" {
		return nil, nil
	}
	a := &auditor{logger: logger, fsync: cfg.Fsync}
	a.enc = json.NewEncoder(&a.value)
	a.enc.SetEscapeHTML(false)
	if cfg.Log {
		a.handler = logger.Handler()
	}
	if cfg.File != "" {
		f, err := openAuditFile(cfg.File)
		if err != nil {
			return nil, err
		}
		a.file = f
	}
	if a.fsync != FsyncAlways || a.file == nil {
		a.wake, a.stop, a.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go a.run()
	}
	return a, nil
}

// take hands a record over to be written.
func (a *auditor) take(e auditEntry) {
	if a.wake == nil {
		a.wmu.Lock()
		a.write([]auditEntry{e})
		a.wmu.Unlock()
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.logger.Error("an audit record came after the audit was closed", "call", e.inv.CallID, "tool", e.inv.Tool)
		return
	}
	a.pending = append(a.pending, e)
	n := len(a.pending)
	a.mu.Unlock()
	switch {
	case n >= maxPending:
		a.flush()
	case n == 1:
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// flush writes the records taken so far.
func (a *auditor) flush() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.mu.Lock()
	batch := a.pending
	a.pending, a.spare = a.spare[:0], nil
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	a.write(batch)
	clear(batch) // let the values go
	a.mu.Lock()
	a.spare = batch[:0]
	a.mu.Unlock()
}

// write writes a batch to the sinks; a.wmu is held.
func (a *auditor) write(batch []auditEntry) {
	line := a.line[:0]
	for i := range batch {
		e := &batch[i]
		rec := e.record()
		if a.handler != nil {
			a.log(e.ctx, &rec)
		}
		if a.file != nil {
			line = append(appendRecord(line, &rec, a.encoded(e)), '\n')
		}
	}
	if a.file == nil || len(line) == 0 {
		return
	}
	if err := a.file.write(line); err != nil {
		a.logger.Error("writing the audit file failed", "records", len(batch), "err", err)
	} else if a.fsync == FsyncAlways {
		if err := a.file.sync(); err != nil {
			a.logger.Error("syncing the audit file failed", "err", err)
		}
	}
	if cap(line) <= 1<<20 {
		a.line = line
	}
}

// encoded returns the encoding of the entry's value: the call's, or one
// made in a.value; a.wmu is held.
func (a *auditor) encoded(e *auditEntry) []byte {
	if e.inv.Value == nil || e.value != nil {
		return e.value
	}
	a.value.Reset()
	if err := a.enc.Encode(e.inv.Value); err != nil {
		return appendString(nil, "<value not marshalable>")
	}
	return bytes.TrimSuffix(a.value.Bytes(), []byte("\n"))
}

// log writes rec to the log at info level. The record is built by hand
// (without the caller's program counter, which an audit line does not
// need).
func (a *auditor) log(ctx context.Context, rec *AuditRecord) {
	if !a.handler.Enabled(ctx, slog.LevelInfo) {
		return
	}
	h := a.sessionHandler(rec.Session)
	r := slog.NewRecord(rec.Time, slog.LevelInfo, "tool call", 0)
	r.AddAttrs(
		slog.String("tool", rec.Tool),
		slog.String("call", rec.CallID),
		slog.Bool("success", rec.Success),
		slog.Duration("duration", rec.Duration),
		slog.String("args", clip(rec.Args, auditLogArgs)),
	)
	if rec.Subject != "" {
		r.AddAttrs(slog.String("subject", rec.Subject))
	}
	if rec.Cached {
		r.AddAttrs(slog.Bool("cached", true))
	}
	if rec.Retries > 0 {
		r.AddAttrs(slog.Int("retries", rec.Retries))
	}
	if !rec.Success {
		r.AddAttrs(slog.String("class", rec.ErrorClass), slog.String("message", rec.Message))
	}
	if rec.Error != "" {
		r.AddAttrs(slog.String("error", rec.Error))
	}
	if err := h.Handle(ctx, r); err != nil {
		a.logger.Error("writing the audit log failed", "err", err)
	}
}

// sessionHandler returns the log's handler with the session attribute
// bound, so that a line's attributes are formatted once per session rather
// than once per call. It keeps the last session's, as a session's calls
// come in runs (a stdio server has one); a.wmu is held.
func (a *auditor) sessionHandler(id string) slog.Handler {
	if a.lastHandler == nil || a.lastSession != id {
		a.lastSession, a.lastHandler = id, a.handler.WithAttrs([]slog.Attr{slog.String("session", id)})
	}
	return a.lastHandler
}

// sync syncs the file, if there is one and records were written to it.
func (a *auditor) sync() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.file == nil {
		return
	}
	if err := a.file.sync(); err != nil {
		a.logger.Error("syncing the audit file failed", "err", err)
	}
}

// run is the writer: it writes each batch flushDelay after its first
// record and, with FsyncInterval, syncs the file once a second while
// records are being written.
func (a *auditor) run() {
	defer close(a.done)
	flushT := time.NewTimer(time.Hour)
	flushT.Stop()
	syncT := time.NewTimer(time.Hour)
	syncT.Stop()
	flushing, syncing := false, false
	for {
		select {
		case <-a.stop:
			return
		case <-a.wake:
			if !flushing {
				flushT.Reset(flushDelay)
				flushing = true
			}
		case <-flushT.C:
			flushing = false
			a.flush()
			if a.fsync == FsyncInterval && a.file != nil && !syncing {
				syncT.Reset(syncInterval)
				syncing = true
			}
		case <-syncT.C:
			syncing = false
			a.sync()
		}
	}
}

// close writes what is pending and closes the file. Records taken after
// close are logged as errors and dropped.
func (a *auditor) close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	if a.stop != nil {
		close(a.stop)
		<-a.done
	}
	a.flush()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.file == nil {
		return nil
	}
	if err := a.file.close(); err != nil {
		return fmt.Errorf("closing the audit file: %w", err)
	}
	return nil
}
