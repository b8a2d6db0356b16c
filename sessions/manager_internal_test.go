package sessions

import (
	"context"
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
	m := newManager(Options{Registry: session.NewRegistry(), Store: store.NewMemory(store.Options{}), TTL: time.Minute, Now: clock})
	ctx := context.Background()
	start := func() *Use {
		u, err := m.Use(ctx, Request{Need: NeedNew})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	idle, busy := start(), start()
	idle.Release()
	conn, err := m.connection(ctx, "c1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	m.release(conn)
	advance(2 * time.Minute)
	m.sweep()
	m.mu.Lock()
	_, idleLeft := m.handles[idle.Handle]
	_, busyLeft := m.handles[busy.Handle]
	_, connLeft := m.handles[conn.handle]
	armed := m.sweeper != nil
	m.mu.Unlock()
	if idleLeft || !busyLeft || !connLeft || !armed {
		t.Fatalf("after the sweep: idle %v, busy %v, connection %v, armed %v", idleLeft, busyLeft, connLeft, armed)
	}
	busy.Release()
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
	m := newManager(Options{Registry: session.NewRegistry(), Store: store.NewMemory(store.Options{}), TTL: time.Minute})
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
