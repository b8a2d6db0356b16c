package server

import (
	"context"
	"log/slog"
)

// callHandler adds a call's attributes to each record it logs. Adding them
// at log time, rather than with Logger.With for every call, keeps calls that
// log nothing (most of them) from paying for formatting they never use.
type callHandler struct {
	slog.Handler
	attrs [3]slog.Attr
}

func callLogger(base *slog.Logger, tool, call, session string) *slog.Logger {
	return slog.New(&callHandler{Handler: base.Handler(), attrs: [3]slog.Attr{
		slog.String("tool", tool), slog.String("call", call), slog.String("session", session),
	}})
}

// Handle adds the call's attributes and passes the record on.
func (h *callHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs[:]...)
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the call's attributes on the derived handler.
func (h *callHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &callHandler{Handler: h.Handler.WithAttrs(as), attrs: h.attrs}
}

// WithGroup keeps the call's attributes on the derived handler.
func (h *callHandler) WithGroup(name string) slog.Handler {
	return &callHandler{Handler: h.Handler.WithGroup(name), attrs: h.attrs}
}
