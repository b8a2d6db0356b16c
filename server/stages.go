package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Meta keys a client may use to shorten a call's deadline.
const (
	MetaTimeoutMs = tools.MetaPrefix + "timeoutMs"
	MetaDeadline  = tools.MetaPrefix + "deadline"
)

// metaAliases maps each _meta key of the former prefix, still read, to the
// key that replaced it.
var metaAliases = map[string]string{
	"io.wink-mcp/timeoutMs": MetaTimeoutMs,
	"io.wink-mcp/deadline":  MetaDeadline,
}

// maxTimeoutMs is the longest timeout a client may ask for, in
// milliseconds: the longest time.Duration.
const maxTimeoutMs = float64(math.MaxInt64 / int64(time.Millisecond))

// readMeta returns a request's _meta with the values mcp-go could not
// decode as the client sent them (a json.RawMessage, which no key's reader
// takes: see HandleMessage), and each key of the former prefix renamed to
// the key that replaced it, unless that key is there too; it logs once per
// former key that it is deprecated.
func (s *Server) readMeta(ctx context.Context, meta map[string]any) map[string]any {
	if raw, ok := ctx.Value(rawKey{}).(sent); ok && raw.meta != nil {
		meta = maps.Clone(meta)
		for k, v := range raw.meta {
			meta[k] = v
		}
	}
	for old, key := range metaAliases {
		v, ok := meta[old]
		if !ok {
			continue
		}
		if _, warned := s.deprecated.LoadOrStore(old, true); !warned {
			s.logger.Warn("a deprecated _meta key was used", "key", old, "use", key)
		}
		meta = maps.Clone(meta)
		delete(meta, old)
		if _, ok := meta[key]; !ok {
			meta[key] = v
		}
	}
	return meta
}

// record makes the call's ToolInvoked record once the rest of the pipeline
// has run, and logs the call at debug level. The record is left on the
// outcome (Invocation) for the stages outside (audit), and for the server,
// which appends it to the session's log after the pipeline. A panic in a
// stage inside is recorded as an internal error, so every call that got
// past lookup is recorded.
func record(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) (out *tools.Outcome) {
		defer func() {
			if p := recover(); p != nil {
				out = tools.Panicked(call, p)
			}
			ev := session.ToolInvoked{
				CallID:     call.ID,
				Tool:       call.Tool.Name(),
				Args:       call.Args,
				Success:    out.Success,
				Message:    out.Message,
				Text:       out.Text(),
				Value:      out.Value,
				Started:    call.Started,
				Duration:   time.Since(call.Started),
				ErrorClass: string(out.Class),
				Cached:     out.Cached,
				Retries:    out.Retries,
				Consent:    out.Consent,
			}
			if out.LoggedArgs != nil {
				ev.Args = out.LoggedArgs
			}
			out.Invocation = &ev
			if !call.Logger.Enabled(ctx, slog.LevelDebug) {
				return
			}
			attrs := []any{"duration", ev.Duration, "success", out.Success}
			if !out.Success {
				attrs = append(attrs, "class", out.Class, "message", out.Message)
			}
			if out.Err != nil {
				attrs = append(attrs, "err", out.Err)
			}
			call.Logger.Debug("tool call", attrs...)
		}()
		return next(ctx, call)
	}
}

// validate checks the deadline the client put in _meta (metaDeadline),
// its dry-run flag (metaDryRun) and the arguments against the tool's
// schema, and decodes the arguments into call.Params.
func (s *Server) validate(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Outcome {
		if _, _, err := metaDeadline(call); err != nil {
			return tools.Failure(tools.ClassValidation, "Invalid _meta: "+err.Error())
		}
		if _, err := metaDryRun(call.Meta); err != nil {
			return tools.Failure(tools.ClassValidation, "Invalid _meta: "+err.Error())
		}
		params, err := call.Tool.Parse(call.Args)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				// Valid against the schema but not decodable: a schema
				// that does not match its Go type.
				call.Logger.Error("arguments passed the schema but did not decode", "err", err)
			}
			return tools.Failure(tools.ClassValidation, s.invalid(call.Tool, err))
		}
		call.Params = params
		return next(ctx, call)
	}
}

// invalid is the message of a call of t whose arguments err refused: what
// the schema error explains (schema.Error.Explain), naming the closest
// argument to an unknown one and listing those t takes as advertised,
// "session" included for a tool of a section that keeps state.
func (s *Server) invalid(t *tools.Tool, err error) string {
	var se *schema.Error
	if !errors.As(err, &se) {
		return "Invalid arguments: " + err.Error()
	}
	if s.stateful[t] {
		return se.Explain(t.Name(), sessionArg)
	}
	return se.Explain(t.Name())
}

// newSession tells a call that failed for want of something its session
// does not hold (tools.Outcome.Missing: a plan, a file, a policy's
// memory) in a session started for it that its session is new, and how to
// name the one it meant (sessions.NewSessionMessage): a client without a
// connection (2026-07-28 over HTTP) that does not pass the handle back
// gets a new, empty session on each call that changes state. It runs
// outside the policies, so that it sees their denials as well as the
// tool's failures.
func newSession(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Outcome {
		out := next(ctx, call)
		if !out.Success && out.Missing != "" {
			if u := useOf(ctx); u != nil && u.Minted {
				if !strings.HasSuffix(out.Message, ".") {
					out.Message += "."
				}
				out.Message += " " + sessions.NewSessionMessage(out.Missing)
			}
		}
		return out
	}
}

// callDeadline returns the call's deadline: the earliest of the server's
// (timeout after the call started), the request context's and the one the
// client put in _meta, when it is well formed (validate refuses the call
// otherwise). It is computed when the call is created, so that stages before
// the deadline stage (concurrency) can wait no longer than it.
func callDeadline(ctx context.Context, call *tools.Call, timeout time.Duration) time.Time {
	deadline := call.Started.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if d, ok, err := metaDeadline(call); err == nil && ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// deadlineStage refuses a call whose deadline has already passed, and bounds
// the rest of the pipeline by it.
func deadlineStage(now func() time.Time) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if !call.Deadline.After(now()) {
				return tools.Failure(tools.ClassDeadline, fmt.Sprintf("Deadline expired before executing tool '%s'.", call.Tool.Name()))
			}
			ctx, cancel := context.WithDeadline(ctx, call.Deadline)
			defer cancel()
			return next(ctx, call)
		}
	}
}

// metaDeadline reads the deadline a client put in the request's _meta: the
// earlier of MetaTimeoutMs (a number of milliseconds, 0 or more, or a string
// holding one) and MetaDeadline (an RFC 3339 time). It reports whether
// either was there, and an error naming the key when one is malformed.
func metaDeadline(call *tools.Call) (time.Time, bool, error) {
	var best time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	if v, ok := call.Meta[MetaTimeoutMs]; ok {
		ms, isNum := v.(float64)
		if s, isStr := v.(string); isStr {
			f, err := strconv.ParseFloat(s, 64)
			ms, isNum = f, err == nil
		}
		if !isNum || !(ms >= 0) || ms > maxTimeoutMs {
			return time.Time{}, false, fmt.Errorf("%s: expected a number of milliseconds from 0 to %.0f, got %s", MetaTimeoutMs, maxTimeoutMs, jsonText(v))
		}
		consider(call.Started.Add(time.Duration(ms * float64(time.Millisecond))))
	}
	if v, ok := call.Meta[MetaDeadline]; ok {
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%s: expected an RFC 3339 time such as \"2026-11-21T12:00:00Z\", got %s", MetaDeadline, jsonText(v))
		}
		consider(t)
	}
	return best, found, nil
}

// jsonText is v as JSON, for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// interrupted is the outcome of a call whose context ended.
func interrupted(call *tools.Call, err error) *tools.Outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return tools.Failure(tools.ClassDeadline, fmt.Sprintf("Tool '%s' exceeded its deadline (%s).", call.Tool.Name(), call.Timeout))
	}
	return tools.Failure(tools.ClassCancelled, fmt.Sprintf("Tool '%s' was cancelled.", call.Tool.Name()))
}

// serialise holds the session's call lock from the policy check to the
// commit or restore: alone for a call that changes state, together with
// the other read-only calls for a call of a tool annotated read-only.
// Waiting for it respects the call's deadline. Once it holds the lock, a
// session in a store that other processes write checks that it is still
// the latest (use.Fresh), so that no call reads, acts outside the session
// or shows a dry run on a revision another process has replaced. A call
// that only changes the session's state (a tool of a Contained section,
// not a dry run) is checked after it ran instead, and only if it sent no
// commit to the store: a commit, by compare-and-swap, settles the
// question (on a replaced revision it loses, and the call runs again). One
// that failed or changed nothing on a replaced revision runs again on the
// latest, as it left nothing behind. A call that waited in vain says
// which call, if any, holds the lock past its deadline.
func (o *overruns) serialise(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Outcome {
		ro := call.Tool.Annotations().ReadOnly
		acquire, release := call.Session.Acquire, call.Session.Release
		if ro {
			acquire, release = call.Session.AcquireRead, call.Session.ReleaseRead
		}
		if err := acquire(ctx); err != nil {
			return o.waited(call, err)
		}
		defer release()
		u := useOf(ctx)
		if u == nil {
			return next(ctx, call)
		}
		after := !ro && !call.DryRun && o.s.rerun[call.Tool]
		if !after {
			if err := u.Fresh(ctx); err != nil {
				return storeFailed(call, err)
			}
		}
		out := next(ctx, call)
		if after && !u.Sent() {
			if err := u.Fresh(ctx); err != nil {
				return storeFailed(call, err)
			}
		}
		return out
	}
}

// transaction snapshots the session (not for a read-only call: see
// session.Session.BeginRead), runs the rest of the pipeline, and commits
// when it succeeded (after the commit hooks, then the store's commit,
// applied together, either of which may still fail the call) or restores
// otherwise: after a failure result, a Go error, a panic, an expired
// deadline or a cancellation alike. A dry run is always restored, and its
// outcome says what it would have changed (dryRun). The commit is a span
// of its own when the call is traced (see traced).
func (s *Server) transaction(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) (out *tools.Outcome) {
		begin := call.Session.Begin
		if call.Tool.Annotations().ReadOnly {
			begin = call.Session.BeginRead
		}
		tx, err := begin()
		if err != nil {
			return failed(call, tools.ClassError, err)
		}
		call.Tx = tx
		defer func() {
			if p := recover(); p != nil {
				out = tools.Panicked(call, p)
			}
			if out.Success && !call.DryRun {
				tx.Commit()
				return
			}
			if err := tx.Rollback(); err != nil {
				call.Logger.Error("restoring the session failed", "err", err)
			}
		}()
		out = next(ctx, call)
		if err := ctx.Err(); err != nil {
			o := interrupted(call, err)
			if !out.Success && out.Class == tools.ClassFailure && out.Message != "" {
				// The handler saw the deadline and said where it stopped.
				o.Message += " " + out.Message
			}
			return o
		}
		switch {
		case out.Success && call.DryRun:
			out = dryRun(call, tx, out)
		case out.Success:
			// A failure here replaces the outcome, and the call is
			// restored like any that failed.
			span := s.startStage(ctx, "commit")
			_ = tx.Apply(func() error {
				if err := call.RunCommitHooks(out); err != nil {
					out = failed(call, tools.ClassOf(err, tools.ClassError), err)
					return err
				}
				if guard, ok := ctx.Value(commitGuardKey{}).(func(context.Context) error); ok {
					if err := guard(ctx); err != nil {
						out = storeFailed(call, err)
						return err
					}
				}
				if u := useOf(ctx); u != nil {
					c := &sessions.Commit{CallID: call.ID, Tool: call.Tool.Name(), ReadOnly: call.Tool.Annotations().ReadOnly, Tx: call.Tx}
					if err := u.Commit(ctx, c); err != nil {
						out = storeFailed(call, err)
						return err
					}
				}
				return nil
			})
			endStage(span, out)
		}
		return out
	}
}

// storeFailed is the outcome of a call whose session the store could not
// check (sessions.Use.Fresh) or store (sessions.Use.Commit).
func storeFailed(call *tools.Call, err error) *tools.Outcome {
	var o *tools.Outcome
	var se sessions.StoreError
	switch {
	case errors.Is(err, sessions.ErrChanged):
		o = tools.Failure(tools.ClassBusy, sessions.ChangedMessage)
	case errors.Is(err, sessions.ErrUnknownSession):
		o = tools.Failure(tools.ClassFailure, sessions.UnknownSessionMessage)
	case errors.As(err, &se):
		o = tools.Failure(tools.ClassError, se.Error())
	default:
		return failed(call, tools.ClassError, fmt.Errorf("storing the session: %w", err))
	}
	o.Err = err
	return o
}

// failed is the outcome of a call that ended in a Go error.
func failed(call *tools.Call, class tools.ErrorClass, err error) *tools.Outcome {
	o := tools.Failure(class, fmt.Sprintf("Tool '%s' failed: %v", call.Tool.Name(), err))
	o.Err = err
	return o
}

// invoke is the innermost handler: it runs the tool. A run that asked its
// client a question it has no answer to fails, whatever the handler
// returned, so that its transaction is restored (awaitsInput).
func invoke(ctx context.Context, call *tools.Call) *tools.Outcome {
	out, err := call.Tool.Invoke(tools.NewContext(ctx, call), call.Params)
	if o := awaitsInput(call); o != nil {
		return o
	}
	if err != nil {
		return failed(call, tools.ClassError, err)
	}
	return out
}
