package server

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestCallLoggerAttrs: a call's logger writes its attributes first, as
// slog.Logger.With would, in records and in loggers derived from it.
func TestCallLoggerAttrs(t *testing.T) {
	var a, b bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
		if at.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return at
	}}
	with := slog.New(slog.NewTextHandler(&a, opts)).With("tool", "t", "call", "c", "session", "s")
	lazy := slog.New(&callHandler{Handler: slog.NewTextHandler(&b, opts), attrs: [...]slog.Attr{
		slog.String("tool", "t"), slog.String("call", "c"), slog.String("session", "s"),
	}})
	for _, l := range []*slog.Logger{with, lazy} {
		l.Info("m", "k", 1)
		l.With("x", 2).Warn("n", "k", 3)
		l.WithGroup("g").Info("o", "k", 4)
		l.Debug("not enabled")
	}
	if a.String() != b.String() {
		t.Fatalf("lazy:\n%s\nwith:\n%s", b.String(), a.String())
	}
}
