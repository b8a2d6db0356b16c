package tools

import "strconv"

// Slot is a place in the call pipeline where stages run besides the
// server's own (package server composes the pipeline; the lifecycle stages
// of package hooks say in which slot each belongs). The slots, outermost
// first, and what the server runs between them:
//
//	(server)     finalise: run the call's finalisers, whatever happened
//	metrics      count calls, errors and latency
//	audit        write each call's record to the audit sinks
//	(server)     record: append ToolInvoked to the session's log
//	output       redact, validate and cap what the model sees, on the way out
//	authorise    refuse a tool the client may not call
//	rate_limit   token buckets and quotas per session and tool
//	concurrency  calls in flight per tool and server-wide
//	cache        answer read-only, idempotent calls from a per-session cache
//	input        normalise arguments before validation
//	(server)     validate, deadline, serialise, new session, policies, steps
//	retry        run the rest again on a transient error
//	(server)     transaction: snapshot, run, commit or restore
//	execute      around the handler, inside the transaction
//	(server)     the handler
type Slot int

// The slots, outermost first: SlotMetrics is the first, SlotExecute the
// last.
const (
	SlotMetrics Slot = iota
	SlotAudit
	SlotOutput
	SlotAuthorise
	SlotRateLimit
	SlotConcurrency
	SlotCache
	SlotInput
	SlotRetry
	SlotExecute
)

var slotNames = [...]string{
	SlotMetrics:     "metrics",
	SlotAudit:       "audit",
	SlotOutput:      "output",
	SlotAuthorise:   "authorise",
	SlotRateLimit:   "rate_limit",
	SlotConcurrency: "concurrency",
	SlotCache:       "cache",
	SlotInput:       "input",
	SlotRetry:       "retry",
	SlotExecute:     "execute",
}

// String returns the slot's name, as the documentation writes it.
func (s Slot) String() string {
	if s < 0 || int(s) >= len(slotNames) {
		return "Slot(" + strconv.Itoa(int(s)) + ")"
	}
	return slotNames[s]
}
