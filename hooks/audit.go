package hooks

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// AuditConfig configures the audit sinks.
type AuditConfig struct {
	Log  bool   `json:"log" jsonschema:"Whether every call is logged at info level."`
	File string `json:"file" jsonschema:"A JSON-lines file every call is appended to, one whole record per line." schema:"minLength=1"`
	// Fsync is FsyncInterval when "".
	Fsync Fsync `json:"fsync" jsonschema:"When the audit file is synced to disk: after every record, before the call returns (always); once a second (interval); or only when closed (never). Without always, records are written in batches within 2 ms of their calls."`
}

// Fsync says when the audit file is synced to stable storage, and so what a
// crash loses. With FsyncAlways every record is written and synced before
// its call returns. Otherwise records are written in batches, within 2 ms
// of their calls: a crash of the server loses at most those last records,
// and fsync says what a crash of the machine loses.
type Fsync string

const (
	// FsyncAlways syncs after every record, before the call's result is
	// returned.
	FsyncAlways Fsync = "always"
	// FsyncInterval syncs once a second when records were written, and on
	// Close.
	FsyncInterval Fsync = "interval"
	// FsyncNever leaves syncing to the operating system (and Close).
	FsyncNever Fsync = "never"
)

// Enum lists the values of Fsync.
func (Fsync) Enum() []string {
	return []string{string(FsyncAlways), string(FsyncInterval), string(FsyncNever)}
}

// AuditRecord is one line of the audit: the call's ToolInvoked event, as
// the session's log holds it (redacted by the output stage: the arguments,
// and the outcome as the client saw it), and who made it.
type AuditRecord struct {
	// Time is when the record was written.
	Time time.Time `json:"time"`
	// Session is the client session's identifier.
	Session string `json:"session"`
	// Subject and Scopes are the caller's identity, if any.
	Subject string   `json:"subject,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	session.ToolInvoked
	// Error is the Go error behind a failure, redacted; the client never
	// sees it.
	Error string `json:"error,omitempty"`
}

// Audit returns the audit stage. It runs outside the server's record stage
// and the output stages, so it sees what the client sees: on the way out it
// takes the ToolInvoked event the call recorded in the session's log
// (redacted by the output stage) and hands it to the auditor, which writes
// it to the log (at info level, when Log is on) before the call returns,
// and to the JSON-lines file (when File is set) shortly after, or before
// the call returns with FsyncAlways. A sink that fails is logged; the call's result is
// unchanged. Nil when both sinks are off.
func (h *Hooks) Audit() tools.Middleware {
	if h.audit == nil {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			out := next(ctx, call)
			h.writeAudit(ctx, call, out)
			return out
		}
	}
}

func (h *Hooks) writeAudit(ctx context.Context, call *tools.Call, out *tools.Outcome) {
	e := auditEntry{ctx: ctx, time: h.now(), session: call.Session.ID(), inv: call.Invocation}
	r := h.plan(call.Tool).redactor
	if e.inv == nil {
		// Not recorded (a pipeline without the record stage): say what
		// is known.
		e.inv = &session.ToolInvoked{
			CallID: call.ID, Tool: call.Tool.Name(), Args: r.JSON(call.Args),
			Success: out.Success, Message: out.Message, Text: out.Text(), Value: out.Value,
			Started: call.Started, Duration: time.Since(call.Started),
			ErrorClass: string(out.Class), Cached: call.Cached, Retries: max(0, call.Attempts-1),
		}
	}
	if id, ok := identity.From(ctx); ok {
		e.subject, e.scopes = id.Subject, id.Scopes
	}
	if out.Err != nil {
		e.err = r.String(out.Err.Error())
	}
	if b, ok := out.EncodedValue(); ok {
		e.value = b
	}
	h.audit.take(e)
}

// auditLogArgs is how many bytes of a call's arguments its audit log line
// shows; the audit file, when configured, keeps them whole.
const auditLogArgs = 256

// clip returns b as a string, cut to at most n bytes (on a rune boundary)
// with a marker saying how much was left out.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…(" + strconv.Itoa(len(b)-cut) + " more bytes)"
}
