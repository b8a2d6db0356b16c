package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/mark3labs/mcp-go/mcp"
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
	// ExcludeValueFromContext keeps the value out of what the model reads;
	// it is still logged and reachable as a resource.
	ExcludeValueFromContext bool
	// Content holds extra content blocks (images, audio, resources).
	Content []mcp.Content
}

// OK returns a successful result.
func OK[R any](message string, value R) Result[R] {
	return Result[R]{Message: message, Value: value, Success: true}
}

// Fail returns a failed result whose message the model reads as the error.
func Fail[R any](message string) Result[R] {
	return Result[R]{Message: message}
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

// Outcome is the untyped result of a call as it travels back through the
// pipeline.
type Outcome struct {
	Message string
	Value   any
	Success bool
	Exclude bool
	Content []mcp.Content
	// Class says why the call failed; ClassNone on success.
	Class ErrorClass
	// Err is the underlying Go error, if any; it is logged, never sent.
	Err error

	text     string
	rendered bool
}

// Failure returns a failed outcome of the given class.
func Failure(class ErrorClass, message string) *Outcome {
	return &Outcome{Message: message, Class: class}
}

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
