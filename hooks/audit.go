package hooks

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// AuditConfig configures the audit sinks.
type AuditConfig struct {
	Log  bool   `json:"log" jsonschema:"Whether every call is logged at info level."`
	File string `json:"file" jsonschema:"A JSON-lines file every call is appended to, one whole record per line." schema:"minLength=1"`
	// Fsync is FsyncInterval when "".
	Fsync Fsync `json:"fsync" jsonschema:"When the audit file is synced to disk: after every record, before the call returns (always); once a second (interval); or only when closed (never). Every record is written to the file before its call returns, so a killed server loses none of an answered call; fsync says what a crash of the machine loses."`
}

// Fsync says when the audit file is synced to stable storage, and so what
// a crash of the machine loses. In every mode a record is written to the
// file (handed to the operating system) before its call returns, so a
// kill of the server (SIGKILL) loses no record of an answered call.
type Fsync string

const (
	// FsyncAlways syncs after every record, before the call's result is
	// returned: a crash of the machine loses no record of an answered
	// call.
	FsyncAlways Fsync = "always"
	// FsyncInterval syncs once a second, if records were written since
	// the last sync, and on Close: a crash of the machine loses the
	// records of the last second at most.
	FsyncInterval Fsync = "interval"
	// FsyncNever leaves syncing to the operating system (and Close): a
	// crash of the machine loses what it had not yet written to the disk.
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
	// Session names the call's session by its session.LogID, never by its
	// handle, which is a credential.
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
// (redacted by the output stage) and writes it, with who made the call, to
// the log (at info level, when Log is on) and to the JSON-lines file (when
// File is set; see Fsync for when a line reaches the disk). A sink that
// fails is logged; the call's result is unchanged. Nil when both sinks are
// off.
func (h *Hooks) Audit() tools.Middleware {
	if h.audit == nil {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			// A call answered at its deadline while its handler still
			// runs is audited as answered, before the answer; what its
			// pipeline returns at last reaches no client.
			call.OnOverrun(func(out *tools.Outcome) { h.writeAudit(ctx, call, out) })
			out := next(ctx, call)
			if !call.Overran() {
				h.writeAudit(ctx, call, out)
			}
			return out
		}
	}
}

func (h *Hooks) writeAudit(ctx context.Context, call *tools.Call, out *tools.Outcome) {
	r := h.plan(call.Tool).redactor
	rec := AuditRecord{Time: h.now(), Session: session.LogID(call.Session.ID())}
	if out.Invocation != nil {
		rec.ToolInvoked = *out.Invocation
	} else {
		// Not recorded (a pipeline without the record stage): say what
		// is known.
		rec.ToolInvoked = session.ToolInvoked{
			CallID: call.ID, Tool: call.Tool.Name(), Args: r.JSON(call.Args),
			Success: out.Success, Message: out.Message, Text: out.Text(), Value: out.Value,
			Started: call.Started, Duration: time.Since(call.Started),
			ErrorClass: string(out.Class), Cached: out.Cached, Retries: out.Retries, Consent: out.Consent,
		}
	}
	if id, ok := identity.From(ctx); ok {
		rec.Subject, rec.Scopes = id.Subject, id.Scopes
	}
	if out.Err != nil {
		rec.Error = r.String(out.Err.Error())
	}
	h.audit.take(ctx, &rec)
}

// auditLogArgs is how many bytes of a call's arguments its audit log line
// shows (session.Cut); the audit file, when configured, keeps them whole.
const auditLogArgs = 256
