package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/session"
)

// Result is what a typed handler returns: a message for the model, a typed
// value, whether the call succeeded, and optional extra content blocks.
type Result[R any] struct {
	// Message is the short text the model reads first.
	Message string
	// Value is the typed payload; it is rendered after the message.
	Value R
	// Success says whether the call did what was asked. A failed call is
	// rolled back and reported with isError.
	Success bool
	// ExcludeValueFromContext keeps the value out of the text the model
	// reads; it is still logged and reachable as a resource, and a tool
	// with an output schema still sends it as structured content, which
	// the schema promises.
	ExcludeValueFromContext bool
	// Content holds extra content blocks (images, audio, resources).
	Content []mcp.Content
	// Missing names what a failed call needed from its session and did
	// not find there ("plan"), when that is why it failed (see Missing).
	Missing string
}

// OK returns a successful result.
func OK[R any](message string, value R) Result[R] {
	return Result[R]{Message: message, Value: value, Success: true}
}

// Fail returns a failed result whose message the model reads as the error.
func Fail[R any](message string) Result[R] {
	return Result[R]{Message: message}
}

// Missing returns a failed result for a call that needs what its session
// does not hold: what names it ("plan", "notes.md in its workspace"),
// message is the error the model reads. When the session was
// started for the call, because its client named none (a client without a
// connection that did not pass the handle back), the server adds that the
// session is new and how to name the one meant.
func Missing[R any](what, message string) Result[R] {
	return Result[R]{Message: message, Missing: what}
}

// Failf is Fail with a format string.
func Failf[R any](format string, args ...any) Result[R] {
	return Result[R]{Message: fmt.Sprintf(format, args...)}
}

// Renderer is implemented by result values that choose the text the model
// reads. Without it a value is rendered as compact JSON.
type Renderer interface {
	Render() string
}

// ErrorClass names why a call failed, for the log and for metrics.
type ErrorClass string

// The error classes of the failure table in the runtime specification.
const (
	ClassNone       ErrorClass = ""
	ClassValidation ErrorClass = "validation"
	ClassPolicy     ErrorClass = "policy"
	ClassDeadline   ErrorClass = "deadline"
	ClassFailure    ErrorClass = "failure"
	ClassError      ErrorClass = "error"
	ClassPanic      ErrorClass = "panic"
	ClassCancelled  ErrorClass = "cancelled"
)

// The error classes of the lifecycle stages (package hooks).
const (
	// ClassUnauthorised: the client may not call the tool.
	ClassUnauthorised ErrorClass = "unauthorised"
	// ClassRateLimited: the session's rate limit or quota is spent.
	ClassRateLimited ErrorClass = "rate_limited"
	// ClassBusy: no concurrency slot came free before the deadline.
	ClassBusy ErrorClass = "busy"
	// ClassOutput: the tool's result does not match its output schema (a
	// bug in the tool).
	ClassOutput ErrorClass = "output"
	// ClassConsent: the user did not allow the call (the consent stage).
	ClassConsent ErrorClass = "consent"
	// ClassInputRequired: the call needs the client's answer, and the
	// client retries it with the answer (multi round-trip requests).
	ClassInputRequired ErrorClass = "input_required"
)

// MetaPrefix begins every _meta key the server reads or writes: the
// reverse-DNS name of the module's home, as MCP names servers.
const MetaPrefix = "io.github.wink-mcp/"

// MetaRetryAfterMs is the key of the result's _meta that tells the client
// how many milliseconds to wait before calling again.
const MetaRetryAfterMs = MetaPrefix + "retryAfterMs"

// MetaDryRun is the _meta key of a request that asks for a dry run
// (true), and of its result, which describes what the call would have
// changed.
const MetaDryRun = MetaPrefix + "dryRun"

// Outcome is the untyped result of a call as it travels back through the
// pipeline: the result out, and what the stages report about the call.
type Outcome struct {
	Message string
	// Value is the result's value.
	Value   any
	Success bool
	Exclude bool
	Content []mcp.Content
	// Class says why the call failed; ClassNone on success.
	Class ErrorClass
	// Err is the underlying Go error, if any; it is logged, never sent.
	Err error
	// Meta is sent as the result's _meta object.
	Meta map[string]any
	// Missing names what the call needed from its session and did not
	// find there, when that is why it failed (Result.Missing, or a
	// policy's denial).
	Missing string

	// Cached marks an outcome answered from a cache without running the
	// tool (set by the cache stage).
	Cached bool
	// Retries counts the runs of the tool's handler after the first, when
	// the retry stage ran it again after transient errors.
	Retries int
	// Consent is the user's decision about the call, when the consent
	// stage asked for one (see session.ToolInvoked.Consent).
	Consent string
	// LoggedArgs, when set, replace the call's arguments in the session's
	// log and the audit: the arguments with secrets redacted (set by the
	// redaction stage; the handler ran with the call's own).
	LoggedArgs json.RawMessage
	// Invocation is the event the record stage appended to the session's
	// log for the call; the stages outside it (audit) read it on their
	// way out.
	Invocation *session.ToolInvoked

	text     string
	rendered bool
}

// Failure returns a failed outcome of the given class. A stage that returns
// it instead of calling the next one aborts the call with that reason.
func Failure(class ErrorClass, message string) *Outcome {
	return &Outcome{Message: message, Class: class}
}

// RetryAfter returns a failed outcome that asks the client to call again
// after delay: the delay goes into the result's _meta under
// MetaRetryAfterMs (whole milliseconds, rounded up); the message should say
// it in words too.
func RetryAfter(class ErrorClass, message string, delay time.Duration) *Outcome {
	o := Failure(class, message)
	ms := (delay + time.Millisecond - 1) / time.Millisecond
	o.Meta = map[string]any{MetaRetryAfterMs: int64(ms)}
	return o
}

// SetText replaces the text block the model reads, for stages that
// transform output (redaction, truncation). Text returns it from then on.
func (o *Outcome) SetText(text string) {
	o.text, o.rendered = text, true
}

// AddFeedback appends a text block after the result's text, for a stage
// that wants the model to know something about the call or the session
// ("The plan has 2 pending steps."). It never changes the content of an
// outcome it shares with another (a cached one).
func (o *Outcome) AddFeedback(text string) {
	o.Content = append(slices.Clip(o.Content), mcp.NewTextContent(text))
}

// Clone returns a copy of o that can be changed without changing o; the
// value itself is shared, as values are immutable.
func (o *Outcome) Clone() *Outcome {
	c := *o
	c.Content = slices.Clone(o.Content)
	c.Meta = maps.Clone(o.Meta)
	return &c
}

// Transient marks err as transient: calling again may succeed (a timeout
// of a remote service, a lock held elsewhere). The retry stage retries a
// call only on such errors, and only for idempotent tools. Transient(nil)
// is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// IsTransient reports whether err, or an error it wraps, was marked with
// Transient.
func IsTransient(err error) bool {
	var t *transientError
	return errors.As(err, &t)
}

type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// WithClass returns err marked with class. When a commit hook (see
// Call.OnCommit) fails with such an error, the call fails with that class
// instead of ClassError.
func WithClass(class ErrorClass, err error) error {
	if err == nil {
		return nil
	}
	return &classedError{class, err}
}

// ClassOf returns the class err was marked with by WithClass, or def.
func ClassOf(err error, def ErrorClass) ErrorClass {
	var c *classedError
	if errors.As(err, &c) {
		return c.class
	}
	return def
}

type classedError struct {
	class ErrorClass
	err   error
}

func (e *classedError) Error() string { return e.err.Error() }
func (e *classedError) Unwrap() error { return e.err }

// Text returns the text block the model reads: the message, a blank line and
// the rendered value; either part alone when the other is empty. The value
// of a failed call and an excluded value are left out.
func (o *Outcome) Text() string {
	if o.rendered {
		return o.text
	}
	v := ""
	if o.Success && !o.Exclude {
		v = RenderValue(o.Value)
	}
	switch {
	case o.Message == "":
		o.text = v
	case v == "":
		o.text = o.Message
	default:
		o.text = o.Message + "\n\n" + v
	}
	o.rendered = true
	return o.text
}

// HasValue reports whether the outcome carries a value: not nil, not a nil
// pointer, map or interface.
func (o *Outcome) HasValue() bool { return !isNil(o.Value) }

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map:
		return rv.IsNil()
	}
	return false
}

// RenderValue renders v with its Render method, or as compact JSON. A nil
// value (or nil pointer) renders as "", an empty slice as "[]".
func RenderValue(v any) string {
	if isNil(v) {
		return ""
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return "[]"
	}
	if r, ok := v.(Renderer); ok {
		return r.Render()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unrenderable value: %v>", err)
	}
	return string(b)
}
