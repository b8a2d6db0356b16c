package server

import (
	"context"
	"crypto/rand"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/session"
)

// Sessions maps client sessions to their state: one session.Session per
// MCP client session (the stdio process, an Mcp-Session-Id, an SSE
// connection). A session is created on first use and ended when mcp-go
// unregisters its client session.
type Sessions struct {
	registry *session.Registry

	mu sync.Mutex
	m  map[string]*session.Session
}

func newSessions(r *session.Registry) *Sessions {
	return &Sessions{registry: r, m: map[string]*session.Session{}}
}

// Get returns the session called id, creating it if needed.
func (m *Sessions) Get(id string) (*session.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.m[id]; ok {
		return s, nil
	}
	s, err := m.registry.NewSession(id)
	if err != nil {
		return nil, err
	}
	m.m[id] = s
	return s, nil
}

// ForContext returns the session of the client session in ctx, and a
// function to call when the request is done with it. Requests without a
// client session share the session called "".
//
// A request of the stateless 2026-07-28 era has no client session that
// outlives it, so it gets a session of its own, which the returned
// function ends: such clients keep no state between requests, and two of
// them never see each other's.
func (m *Sessions) ForContext(ctx context.Context) (*session.Session, func(), error) {
	if mcpserver.IsModernRequest(ctx) {
		s, err := m.registry.NewSession("stateless-" + rand.Text())
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	}
	id := ""
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		id = cs.SessionID()
	}
	s, err := m.Get(id)
	return s, func() {}, err
}

// End closes and forgets the session called id.
func (m *Sessions) End(id string) {
	m.mu.Lock()
	s, ok := m.m[id]
	delete(m.m, id)
	m.mu.Unlock()
	if ok {
		_ = s.Close()
	}
}

// Len returns the number of live sessions.
func (m *Sessions) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
