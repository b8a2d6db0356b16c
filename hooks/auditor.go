package hooks

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/wink-mcp/wink-mcp/session"
)

// auditor writes each call's audit record to the sinks: a line in the log
// and a line in the JSON-lines file. Both lines are written by the call
// itself, through log/slog: the log's line by the configured logger, the
// file's by a JSON handler on the file, which has it before the call
// returns.
type auditor struct {
	log    *slog.Logger // the audit log, or nil when it is off
	logger *slog.Logger // for the auditor's own errors
	file   *auditFile   // nil when there is none
	lines  slog.Handler // writes the file's lines
}

// newAuditor opens the sinks cfg asks for, or returns nil when it asks for
// none.
func newAuditor(cfg AuditConfig, logger *slog.Logger) (*auditor, error) {
	if !cfg.Log && cfg.File == "" {
		return nil, nil
	}
	a := &auditor{logger: logger}
	if cfg.Log {
		a.log = logger
	}
	if cfg.File == "" {
		return a, nil
	}
	f, err := openAuditFile(cfg.File, cfg.Fsync, logger)
	if err != nil {
		return nil, err
	}
	a.file = f
	a.lines = slog.NewJSONHandler(f, &slog.HandlerOptions{ReplaceAttr: recordKeys})
	return a, nil
}

// recordKeys drops the level and the message from the file's lines: a line
// is an AuditRecord, whose time is the line's own.
func recordKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
		return slog.Attr{}
	}
	return a
}

// take writes rec to the sinks. A sink that fails is logged.
func (a *auditor) take(ctx context.Context, rec *AuditRecord) {
	if a.log != nil {
		a.log.LogAttrs(ctx, slog.LevelInfo, "tool call", logAttrs(rec)...)
	}
	if a.file == nil {
		return
	}
	r := slog.NewRecord(rec.Time, slog.LevelInfo, "", 0)
	r.AddAttrs(fileAttrs(rec)...)
	err := a.lines.Handle(ctx, r)
	if err == nil && a.file.fsync == FsyncAlways {
		err = a.file.sync() // on disk before the call is answered
	}
	switch {
	case errors.Is(err, os.ErrClosed):
		a.logger.Error("an audit record came after the audit was closed", "call", rec.CallID, "tool", rec.Tool)
	case err != nil:
		a.logger.Error("writing the audit file failed", "call", rec.CallID, "err", err)
	}
}

// logAttrs are the attributes of rec's line in the log.
func logAttrs(rec *AuditRecord) []slog.Attr {
	attrs := []slog.Attr{slog.String("session", rec.Session)}
	if rec.Subject != "" {
		attrs = append(attrs, slog.String("subject", rec.Subject))
	}
	attrs = append(attrs,
		slog.String("tool", rec.Tool),
		slog.String("call", rec.CallID),
		slog.Bool("success", rec.Success),
		slog.Duration("duration", rec.Duration),
		slog.String("args", session.Cut(rec.Args, auditLogArgs)),
	)
	if rec.Cached {
		attrs = append(attrs, slog.Bool("cached", true))
	}
	if rec.Retries > 0 {
		attrs = append(attrs, slog.Int("retries", rec.Retries))
	}
	if rec.Consent != "" {
		attrs = append(attrs, slog.String("consent", rec.Consent))
	}
	if !rec.Success {
		attrs = append(attrs, slog.String("class", rec.ErrorClass), slog.String("message", rec.Message))
	}
	if rec.Error != "" {
		attrs = append(attrs, slog.String("error", rec.Error))
	}
	return attrs
}

// fileAttrs are the attributes of rec's line in the file, after its time:
// the keys, order and omissions of AuditRecord's JSON encoding, so that
// ReadAudit decodes the line into rec.
func fileAttrs(rec *AuditRecord) []slog.Attr {
	attrs := []slog.Attr{slog.String("session", rec.Session)}
	if rec.Subject != "" {
		attrs = append(attrs, slog.String("subject", rec.Subject))
	}
	if len(rec.Scopes) > 0 {
		attrs = append(attrs, slog.Any("scopes", rec.Scopes))
	}
	attrs = append(attrs,
		slog.String("call_id", rec.CallID),
		slog.String("tool", rec.Tool),
		slog.Any("arguments", rec.Args),
		slog.Bool("success", rec.Success),
		slog.String("message", rec.Message),
		slog.String("text", rec.Text),
	)
	if rec.Value != nil {
		attrs = append(attrs, slog.Any("value", rec.Value))
	}
	attrs = append(attrs, slog.Time("started", rec.Started), slog.Duration("duration_ns", rec.Duration))
	if rec.ErrorClass != "" {
		attrs = append(attrs, slog.String("error_class", rec.ErrorClass))
	}
	if rec.Cached {
		attrs = append(attrs, slog.Bool("cached", true))
	}
	if rec.Retries != 0 {
		attrs = append(attrs, slog.Int("retries", rec.Retries))
	}
	if rec.Consent != "" {
		attrs = append(attrs, slog.String("consent", rec.Consent))
	}
	if rec.Error != "" {
		attrs = append(attrs, slog.String("error", rec.Error))
	}
	return attrs
}

// close syncs and closes the file.
func (a *auditor) close() error {
	if a.file == nil {
		return nil
	}
	return a.file.close()
}
