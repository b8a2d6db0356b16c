package server

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// TestSweep: the sweep ends the sessions named by their handles alone that
// have been idle longer than the TTL, and only those: not one in use, not
// a connection's; it runs again while sessions are left.
func TestSweep(t *testing.T) {
	var mu sync.Mutex // the sweep may also run on its timer
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	m := newSessions(session.NewRegistry(), store.NewMemory(store.Options{}), slog.Default(), time.Minute, 0, 0, clock)
	ctx := context.Background()
	start := func() use {
		u, err := m.forRequest(ctx, "", needNew)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	idle, busy := start(), start()
	idle.release()
	conn, err := m.connection(ctx, "c1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	m.release(conn)
	advance(2 * time.Minute)
	m.sweep()
	m.mu.Lock()
	_, idleLeft := m.handles[idle.handle]
	_, busyLeft := m.handles[busy.handle]
	_, connLeft := m.handles[conn.handle]
	armed := m.sweeper != nil
	m.mu.Unlock()
	if idleLeft || !busyLeft || !connLeft || !armed {
		t.Fatalf("after the sweep: idle %v, busy %v, connection %v, armed %v", idleLeft, busyLeft, connLeft, armed)
	}
	busy.release()
	advance(2 * time.Minute)
	m.sweep()
	m.mu.Lock()
	n, armed := len(m.handles), m.sweeper != nil
	m.mu.Unlock()
	if n != 1 || armed {
		t.Errorf("%d sessions, armed %v; want the connection's alone, unarmed", n, armed)
	}
}

// TestForgetInUse: a session forgotten while a request uses it is closed
// when the request is done, not before.
func TestForgetInUse(t *testing.T) {
	m := newSessions(session.NewRegistry(), store.NewMemory(store.Options{}), slog.Default(), time.Minute, 0, 0, time.Now)
	ctx := context.Background()
	e, err := m.connection(ctx, "c1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	m.End("c1", true)
	if _, err := e.sess.Begin(); err != nil {
		t.Fatalf("closed while in use: %v", err)
	}
	m.release(e)
	if _, err := e.sess.Begin(); err != session.ErrClosed {
		t.Errorf("after the release: %v, want ErrClosed", err)
	}
}

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
