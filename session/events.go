package session

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// ToolInvoked records one tool call that got past lookup, whether it
// succeeded, was rejected or failed. It marshals to JSON and back
// unchanged but for Value, which comes back as a generic JSON value; that
// is the form a session's call log keeps it in.
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
	// Consent is the decision that let the call run or stopped it, when
	// the tool needs the user's consent: "accepted", "accepted for the
	// session", "remembered for the session", "declined", "cancelled",
	// "allowed by fallback" or "denied by fallback" (the client cannot
	// ask), "accepted in the console", "declined in the console" or
	// "unanswered in the console" (consent.fallback console), or "failed"
	// (asking failed).
	Consent string `json:"consent,omitempty"`
}

// MaxSummaryArgs is the most bytes of a call's arguments that a
// CallSummary keeps, its cut marker included.
const MaxSummaryArgs = 1024

// CallSummary is how a session's call log lists a call: which tool, how it
// went, when, and the start of its arguments. Its size is bounded whatever
// the call carried. It marshals to JSON and back unchanged.
type CallSummary struct {
	CallID     string        `json:"call_id"`
	Tool       string        `json:"tool"`
	Success    bool          `json:"success"`
	ErrorClass string        `json:"error_class,omitempty"`
	Started    time.Time     `json:"started"`
	Duration   time.Duration `json:"duration_ns"`
	// Args is the call's arguments as sent, or, when they are longer than
	// MaxSummaryArgs bytes, as Cut leaves them.
	Args string `json:"arguments"`
	// Message is the message the model read, cut like Args.
	Message string `json:"message,omitempty"`
	// Consent is the consent decision of the call, if it needed one.
	Consent string `json:"consent,omitempty"`
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
		Args:       Cut(ev.Args, MaxSummaryArgs),
		Message:    Cut([]byte(ev.Message), MaxSummaryArgs),
		Consent:    ev.Consent,
	}
}

// Cut returns b as a string of at most limit bytes, so that a log keeps a
// bounded part of something a call carried: b itself if it fits, otherwise
// its start, cut at a character boundary, followed by the marker
// "…[cut: N bytes]", where N is the length of b. When limit is shorter
// than the marker, the result is the marker alone.
func Cut(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	marker := fmt.Sprintf("…[cut: %d bytes]", len(b))
	n := max(limit-len(marker), 0)
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + marker
}
