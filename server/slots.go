package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Slot names a place in the call pipeline where Options.Stages inserts
// middleware. The server's own stages (finalise, record, validate,
// deadline, serialise, policies, transaction) are fixed; the slots between
// them hold the lifecycle stages of package hooks and any a user of the Go
// API adds. Outermost first:
//
//	finalise     (server) run the call's finalisers, whatever happened
//	metrics      count calls, errors and latency
//	audit        append each call's record to the audit sinks
//	record       (server) append ToolInvoked to the session's log
//	output       redact, validate and cap what the model sees, on the way out
//	authorise    refuse a tool the client may not call
//	rate_limit   token buckets and quotas per session and tool
//	concurrency  calls in flight per tool and server-wide
//	cache        answer read-only, idempotent calls from a per-session cache
//	input        normalise arguments before validation; Options.Middleware go last here
//	validate     (server) check the arguments against the schema
//	deadline     (server) refuse a call whose deadline has passed; bound the rest
//	serialise    (server) one call per session from here to the commit or restore
//	policies     (server) the tool's section's policies, then the server-wide ones
//	steps        (server) lets a handler acting for other tools have each step checked
//	retry        run the rest again on a transient error
//	transaction  (server) snapshot, run, commit or restore
//	execute      around the handler, inside the transaction
//	handler      (server) the tool
type Slot string

// The slots, outermost first.
const (
	SlotMetrics     Slot = "metrics"
	SlotAudit       Slot = "audit"
	SlotOutput      Slot = "output"
	SlotAuthorise   Slot = "authorise"
	SlotRateLimit   Slot = "rate_limit"
	SlotConcurrency Slot = "concurrency"
	SlotCache       Slot = "cache"
	SlotInput       Slot = "input"
	SlotRetry       Slot = "retry"
	SlotExecute     Slot = "execute"
)

// Slots lists every slot, outermost first.
var Slots = []Slot{
	SlotMetrics, SlotAudit, SlotOutput, SlotAuthorise, SlotRateLimit,
	SlotConcurrency, SlotCache, SlotInput, SlotRetry, SlotExecute,
}

// pipeline composes the server's stages and the slots' middleware into the
// handler every call runs through.
func (s *Server) pipeline(opts Options) (tools.Handler, error) {
	for slot := range opts.Stages {
		if !slices.Contains(Slots, slot) {
			return nil, fmt.Errorf("server: unknown pipeline slot %q", slot)
		}
	}
	var stages []tools.Middleware
	add := func(mws ...tools.Middleware) {
		for _, mw := range mws {
			if mw != nil {
				stages = append(stages, mw)
			}
		}
	}
	slot := func(sl Slot) {
		for _, mw := range opts.Stages[sl] {
			if mw != nil {
				stages = append(stages, contained(mw))
			}
		}
	}

	add(tools.Finalise)
	slot(SlotMetrics)
	slot(SlotAudit)
	add(record)
	slot(SlotOutput)
	slot(SlotAuthorise)
	slot(SlotRateLimit)
	slot(SlotConcurrency)
	slot(SlotCache)
	slot(SlotInput)
	for _, mw := range opts.Middleware {
		stages = append(stages, contained(mw))
	}
	add(validate, deadlineStage(opts.Now), serialise,
		policy.Middleware(func(t *tools.Tool) []policy.Policy { return s.policies[t] }),
		policy.Steps(func(name string) (*tools.Tool, []policy.Policy) {
			t := s.byName[name]
			return t, s.policies[t]
		}))
	slot(SlotRetry)
	add(transaction)
	slot(SlotExecute)
	return tools.Chain(stages...)(invoke), nil
}

// contained wraps a stage so that a panic in it becomes an internal-error
// outcome where it happens: the stages outside see a failed call, like any
// other, and still run their way out. (Finalise and record recover too, as
// a last resort.)
func contained(mw tools.Middleware) tools.Middleware {
	return func(next tools.Handler) tools.Handler {
		h := mw(next)
		return func(ctx context.Context, call *tools.Call) (out *tools.Outcome) {
			defer func() {
				if p := recover(); p != nil {
					out = tools.Panicked(call, p)
				}
			}()
			return h(ctx, call)
		}
	}
}
