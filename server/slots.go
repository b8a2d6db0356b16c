package server

import (
	"context"
	"fmt"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/tools"
)

// pipeline composes the server's stages and the slots' middleware into the
// handler every call runs through.
func (s *Server) pipeline(opts Options) (tools.Handler, error) {
	for slot := range opts.Stages {
		if slot < tools.SlotMetrics || slot > tools.SlotExecute {
			return nil, fmt.Errorf("server: unknown pipeline slot %v", slot)
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
	slot := func(sl tools.Slot) {
		for _, mw := range opts.Stages[sl] {
			if mw != nil {
				if waits[sl] {
					mw = s.traced(sl.String(), mw)
				}
				stages = append(stages, contained(mw))
			}
		}
	}

	add(tools.Finalise)
	slot(tools.SlotMetrics)
	slot(tools.SlotAudit)
	add(record)
	slot(tools.SlotOutput)
	slot(tools.SlotAuthorise)
	slot(tools.SlotRateLimit)
	slot(tools.SlotConcurrency)
	slot(tools.SlotCache)
	slot(tools.SlotInput)
	for _, mw := range opts.Middleware {
		stages = append(stages, contained(mw))
	}
	add(s.disclose, s.traced("validate", s.validate), deadlineStage(opts.Now), s.overruns.stage(),
		s.traced("serialise", s.overruns.serialise), newSession,
		s.traced("policies", policy.Middleware(func(t *tools.Tool) []policy.Policy { return s.policies[t] })),
		policy.Steps(func(name string) (*tools.Tool, []policy.Policy) {
			t := s.byName[name]
			return t, s.policies[t]
		}),
		s.traced("consent", consentStage(opts.Consent)))
	slot(tools.SlotRetry)
	add(s.traced("transaction", s.transaction))
	slot(tools.SlotExecute)
	// The handler is the end of the chain: a stage that passes nothing on.
	handler := s.traced("handler", func(tools.Handler) tools.Handler { return invoke })(nil)
	return tools.Chain(stages...)(handler), nil
}

// waits holds the slots whose stages may keep a call waiting (for a token
// of its bucket, for a concurrency slot): each has a span of its own when
// the call is traced (see traced), as the server's stages that take time
// do.
var waits = map[tools.Slot]bool{tools.SlotRateLimit: true, tools.SlotConcurrency: true}

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

// consentStage is c's middleware, or nil without c.
func consentStage(c Consent) tools.Middleware {
	if c == nil {
		return nil
	}
	return c.Middleware()
}
