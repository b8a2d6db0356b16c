package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogSink checks that info lines wait in the buffer, that a warning
// flushes them and itself at once, in order, and that Flush empties it.
func TestLogSink(t *testing.T) {
	var out lockedBuffer
	sink := newLogSink(&out)
	logger, err := newLogger(sink, false, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("first")
	logger.Debug("hidden")
	if got := out.String(); got != "" && !strings.Contains(got, "first") {
		t.Fatalf("unexpected output %q", got)
	}
	logger.Warn("second")
	got := out.String()
	if i, j := strings.Index(got, "first"), strings.Index(got, "second"); i < 0 || j < i {
		t.Fatalf("after a warning, want both lines in order, got %q", got)
	}
	logger.With("k", "v").Error("third")
	if !strings.Contains(out.String(), `"k":"v"`) {
		t.Fatalf("a derived logger's error was not flushed: %q", out.String())
	}
	logger.Info("fourth")
	sink.Flush()
	if !strings.Contains(out.String(), "fourth") || strings.Contains(out.String(), "hidden") {
		t.Fatalf("after Flush: %q", out.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 4 {
		t.Errorf("%d lines, want 4 whole lines", n)
	}
}

func TestNewLoggerRejectsBadSettings(t *testing.T) {
	for _, tc := range [][2]string{{"loud", "text"}, {"info", "xml"}} {
		if _, err := newLogger(newLogSink(&bytes.Buffer{}), false, tc[0], tc[1]); err == nil {
			t.Errorf("newLogger(%q, %q) accepted", tc[0], tc[1])
		}
	}
}
