package server

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wink-mcp/wink-mcp/tools"
)

// stageKey is the context key of the span of the stage a call is in
// (traced).
type stageKey struct{}

// traced returns mw, a stage, so that the time it takes before it passes
// a call on, or answers it itself, is a span named name under the span of
// the call's request, when the request is traced. The stages of a call
// thus show side by side, each as long as the call waited or worked in it
// (for a concurrency slot, its session's lock, the user's consent, the
// handler), rather than nested in one another; what a stage does on the
// way out is not in its span (the commit has a span of its own). Without
// a tracer it returns mw itself: tracing off costs a call nothing.
func (s *Server) traced(name string, mw tools.Middleware) tools.Middleware {
	if s.tracer == nil || mw == nil {
		return mw
	}
	return func(next tools.Handler) tools.Handler {
		h := mw(func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if span, ok := ctx.Value(stageKey{}).(trace.Span); ok {
				span.End()
			}
			return next(ctx, call)
		})
		return func(ctx context.Context, call *tools.Call) (out *tools.Outcome) {
			span := s.startStage(ctx, name)
			if span == nil {
				return h(ctx, call)
			}
			defer func() { endStage(span, out) }()
			return h(context.WithValue(ctx, stageKey{}, span), call)
		}
	}
}

// startStage starts the span of the stage name, a child of the span of
// ctx's request, if the request is traced; it returns nil otherwise.
func (s *Server) startStage(ctx context.Context, name string) trace.Span {
	if s.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return nil
	}
	_, span := s.tracer.Start(ctx, name)
	return span
}

// endStage ends span, unless it is nil or has ended, with the outcome of
// its stage: an error with the stage's message when the call failed there
// (out is nil after a panic).
func endStage(span trace.Span, out *tools.Outcome) {
	if span == nil || !span.IsRecording() {
		return
	}
	switch {
	case out == nil:
		span.SetStatus(codes.Error, "panic")
	case !out.Success:
		span.SetStatus(codes.Error, out.Message)
	}
	span.End()
}
