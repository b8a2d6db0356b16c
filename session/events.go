package session

import (
	"encoding/json"
	"time"
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
