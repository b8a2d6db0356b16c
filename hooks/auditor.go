package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// auditor writes audit records to the sinks: a line in the log, a line in
// the file.
//
// A call writes its log line itself, as it would any other log line: a
// line costs less to format on the call's own thread, where what it shows
// is at hand, than on another. A call hands its file record over and
// returns; the file records are written a batch at a time, at most
// flushDelay after the first of them was taken, in the order taken, by a
// timer's goroutine. A crash of the server loses at most the records of
// that last moment, never an earlier one. With FsyncAlways the call writes
// its record itself, and syncs the file, before it returns. When the
// writes fall behind by maxPending records, calls write the batch
// themselves.
type auditor struct {
	handler slog.Handler // the log's, or nil when not logging
	logger  *slog.Logger // for the auditor's own errors
	fsync   Fsync
	toFile  bool // the file sink is on

	hmu         sync.Mutex                     // guards handlers
	handlers    map[auditLineKey]*boundHandler // by the attributes they bind
	lastHandler atomic.Pointer[boundHandler]   // the one last used

	mu      sync.Mutex // guards pending, spare and closed
	pending []auditEntry
	spare   []auditEntry // the slice pending is swapped with
	closed  bool

	flushT *time.Timer // writes the pending batch; nil with FsyncAlways

	wmu     sync.Mutex    // one batch is written at a time; guards the rest
	file    *auditFile    // nil when there is none, or once closed
	syncT   *time.Timer   // syncs the file, with FsyncInterval
	syncing bool          // syncT is set
	line    []byte        // the batch's lines, reused
	value   bytes.Buffer  // a value's encoding, reused
	enc     *json.Encoder // encodes values into value
}

// auditEntry is a call's audit record, as the call hands it over: what
// the call knows of it (the event the session's log holds, which no one
// changes) and nothing copied that need not be.
type auditEntry struct {
	ctx     context.Context // the call's, for the log handler; not kept
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
	if cfg.File == "" {
		return a, nil
	}
	f, err := openAuditFile(cfg.File)
	if err != nil {
		return nil, err
	}
	a.file, a.toFile = f, true
	if a.fsync != FsyncAlways {
		a.flushT = time.AfterFunc(time.Hour, a.flush)
		a.flushT.Stop()
	}
	if a.fsync == FsyncInterval {
		a.syncT = time.AfterFunc(time.Hour, a.sync)
		a.syncT.Stop()
	}
	return a, nil
}

// take writes a call's record to the log and hands it over to be written
// to the file.
func (a *auditor) take(e auditEntry) {
	if a.handler != nil {
		a.log(&e)
	}
	if !a.toFile {
		return
	}
	e.ctx = nil
	if a.flushT == nil {
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
		a.flushT.Reset(flushDelay)
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

// write writes a batch to the file; a.wmu is held.
func (a *auditor) write(batch []auditEntry) {
	if a.file == nil {
		a.logger.Error("audit records came after the audit file was closed", "records", len(batch))
		return
	}
	line := a.line[:0]
	for i := range batch {
		e := &batch[i]
		rec := e.record()
		line = append(appendRecord(line, &rec, a.encoded(e)), '\n')
	}
	if err := a.file.write(line); err != nil {
		a.logger.Error("writing the audit file failed", "records", len(batch), "err", err)
	} else if a.fsync == FsyncAlways {
		if err := a.file.sync(); err != nil {
			a.logger.Error("syncing the audit file failed", "err", err)
		}
	} else if a.syncT != nil && !a.syncing {
		a.syncing = true
		a.syncT.Reset(syncInterval)
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

// log writes the entry's record to the log at info level. The record is
// built by hand (without the caller's program counter, which an audit line
// does not need).
func (a *auditor) log(e *auditEntry) {
	if !a.handler.Enabled(e.ctx, slog.LevelInfo) {
		return
	}
	inv := e.inv
	r := slog.NewRecord(e.time, slog.LevelInfo, "tool call", 0)
	r.AddAttrs(
		slog.String("call", inv.CallID),
		slog.Bool("success", inv.Success),
		slog.Duration("duration", inv.Duration),
		slog.String("args", clip(inv.Args, auditLogArgs)),
	)
	if inv.Cached {
		r.AddAttrs(slog.Bool("cached", true))
	}
	if inv.Retries > 0 {
		r.AddAttrs(slog.Int("retries", inv.Retries))
	}
	if !inv.Success {
		r.AddAttrs(slog.String("class", inv.ErrorClass), slog.String("message", inv.Message))
	}
	if e.err != "" {
		r.AddAttrs(slog.String("error", e.err))
	}
	if err := a.lineHandler(auditLineKey{e.session, e.subject, inv.Tool}).Handle(e.ctx, r); err != nil {
		a.logger.Error("writing the audit log failed", "err", err)
	}
}

// auditLineKey is what an audit line shares with many others: the
// session, the subject and the tool.
type auditLineKey struct{ session, subject, tool string }

// boundHandler is the log's handler with a key's attributes bound, so that
// it formats them once rather than on every line.
type boundHandler struct {
	key auditLineKey
	h   slog.Handler
}

// maxAuditHandlers bounds how many bound handlers are kept; past it they
// are dropped and bound again as lines need them.
const maxAuditHandlers = 1024

// lineHandler returns the log's handler with k bound: the last one
// returned when its key is the same (a session's calls of one tool come
// in runs), else the one kept for k, else a new one.
func (a *auditor) lineHandler(k auditLineKey) slog.Handler {
	if b := a.lastHandler.Load(); b != nil && b.key == k {
		return b.h
	}
	a.hmu.Lock()
	defer a.hmu.Unlock()
	b, ok := a.handlers[k]
	if !ok {
		if a.handlers == nil || len(a.handlers) >= maxAuditHandlers {
			a.handlers = make(map[auditLineKey]*boundHandler)
		}
		attrs := []slog.Attr{slog.String("session", k.session)}
		if k.subject != "" {
			attrs = append(attrs, slog.String("subject", k.subject))
		}
		b = &boundHandler{k, a.handler.WithAttrs(append(attrs, slog.String("tool", k.tool)))}
		a.handlers[k] = b
	}
	a.lastHandler.Store(b)
	return b.h
}

// sync syncs the file, if there is one.
func (a *auditor) sync() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.syncing = false
	if a.file == nil {
		return
	}
	if err := a.file.sync(); err != nil {
		a.logger.Error("syncing the audit file failed", "err", err)
	}
}

// close writes what is pending and closes the file. Records taken after
// close still reach the log; they are dropped from the file, with an
// error in the log.
func (a *auditor) close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	if a.flushT != nil {
		a.flushT.Stop()
	}
	if a.syncT != nil {
		a.syncT.Stop()
	}
	a.flush()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.file == nil {
		return nil
	}
	f := a.file
	a.file = nil
	if err := f.close(); err != nil {
		return fmt.Errorf("closing the audit file: %w", err)
	}
	return nil
}
