package session

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// ToolInvoked records one tool call that got past lookup, whether it
// succeeded, was rejected or failed.
type ToolInvoked struct {
	CallID   string          `json:"call_id"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Success  bool            `json:"success"`
	Message  string          `json:"message"`
	Text     string          `json:"text"`
	Value    any             `json:"value,omitempty"`
	Started  time.Time       `json:"started"`
	Duration time.Duration   `json:"duration_ns"`
	// ErrorClass says why the call failed ("validation", "policy",
	// "deadline", "failure", "error", "panic", "cancelled", and those of
	// the lifecycle stages: "unauthorised", "rate_limited", "busy",
	// "output"); empty on success.
	ErrorClass string `json:"error_class,omitempty"`
	// Cached marks a result served from a cache without running the tool.
	Cached bool `json:"cached,omitempty"`
	// Retries counts the runs of the tool's handler after the first, when
	// the call was retried after transient errors.
	Retries int `json:"retries,omitempty"`
}

// Invocations is the LOG slice of every session that records its
// ToolInvoked events.
var Invocations = NewLogKey[ToolInvoked]("invocations")

// MaxSummaryArgs is the most bytes of a call's arguments that a
// CallSummary keeps, its cut marker included.
const MaxSummaryArgs = 1024

// CallSummary is what a session keeps of a call once it has ended: which
// tool, how it went, when, and the start of its arguments. Its size is
// bounded whatever the call carried, so that a session's call log grows by
// a bounded amount per call. It marshals to JSON and back unchanged; that
// is its stored form.
type CallSummary struct {
	CallID     string        `json:"call_id"`
	Tool       string        `json:"tool"`
	Success    bool          `json:"success"`
	ErrorClass string        `json:"error_class,omitempty"`
	Started    time.Time     `json:"started"`
	Duration   time.Duration `json:"duration_ns"`
	// Args is the call's arguments as sent, or, when they are longer than
	// MaxSummaryArgs bytes, their start cut at a character boundary and
	// followed by a marker "…[cut: N bytes]" that gives the full length.
	Args string `json:"arguments"`
}

// Summarize returns the summary of a call.
func Summarize(ev ToolInvoked) CallSummary {
	return CallSummary{
		CallID:     ev.CallID,
		Tool:       ev.Tool,
		Success:    ev.Success,
		ErrorClass: ev.ErrorClass,
		Started:    ev.Started,
		Duration:   ev.Duration,
		Args:       cut(ev.Args, MaxSummaryArgs),
	}
}

// cut returns b as a string of at most max bytes: b itself if it fits,
// otherwise its start, cut at a character boundary, and a marker.
func cut(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	marker := fmt.Sprintf("…[cut: %d bytes]", len(b))
	n := max - len(marker)
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + marker
}
