package hooks

import (
	"context"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

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
// (redacted by the output stage) and appends it to the log
// (at info level, when Log is on) and to the JSON-lines file (when File is
// set). A sink that fails is logged; the call's result is unchanged. Nil
// when both sinks are off.
func (h *Hooks) Audit() tools.Middleware {
	if !h.cfg.Audit.Log && h.audit == nil {
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
	rec := AuditRecord{Time: h.now(), Session: call.Session.ID()}
	r := h.plan(call.Tool).redactor
	if call.Invocation != nil {
		rec.ToolInvoked = *call.Invocation // its arguments redacted already
	} else {
		// Not recorded (a pipeline without the record stage): say what
		// is known.
		rec.ToolInvoked = session.ToolInvoked{
			CallID: call.ID, Tool: call.Tool.Name(), Args: call.Args,
			Success: out.Success, Message: out.Message, Text: out.Text(), Value: out.Value,
			Started: call.Started, Duration: time.Since(call.Started),
			ErrorClass: string(out.Class), Cached: call.Cached, Retries: max(0, call.Attempts-1),
		}
		rec.Args = r.JSON(rec.Args)
	}
	if id, ok := identity.From(ctx); ok {
		rec.Subject, rec.Scopes = id.Subject, id.Scopes
	}
	if out.Err != nil {
		rec.Error = r.String(out.Err.Error())
	}
	if h.cfg.Audit.Log {
		h.logAudit(ctx, &rec)
	}
	if h.audit != nil {
		value, err := out.ValueJSON()
		if err != nil {
			value = nil
		}
		if err := h.audit.append(&rec, value); err != nil {
			h.logger.Error("writing the audit record failed", "file", h.cfg.Audit.File, "call", rec.CallID, "err", err)
		}
	}
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

// logAudit writes rec to the log at info level. The record is built by hand
// (without the caller's program counter, which an audit line does not
// need), as it is written for every call.
func (h *Hooks) logAudit(ctx context.Context, rec *AuditRecord) {
	handler := h.logger.Handler()
	if !handler.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(rec.Time, slog.LevelInfo, "tool call", 0)
	r.AddAttrs(
		slog.String("session", rec.Session),
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
	if err := handler.Handle(ctx, r); err != nil {
		h.logger.Error("writing the audit log failed", "err", err)
	}
}
