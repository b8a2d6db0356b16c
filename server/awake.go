package server

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// awake keeps the session store from going dormant while a client is
// subscribed to a resource: such a client waits on the store's watch for
// other processes' commits, which no call of its own would wake a
// dormant store to see (sessions.Manager.KeepAwake).
type awake struct {
	mu sync.Mutex
	// subs holds, by client session ID, the URIs the client is
	// subscribed to and the release of the hold they keep.
	subs map[string]*held
}

// held is what one client keeps awake.
type held struct {
	uris    map[string]bool
	release func()
}

// subscribe notes that the client of ctx subscribed to uri, and keeps the
// store awake from its first subscription on.
func (s *Server) subscribe(ctx context.Context, uri string) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	s.awake.mu.Lock()
	defer s.awake.mu.Unlock()
	h := s.awake.subs[cs.SessionID()]
	if h == nil {
		if s.awake.subs == nil {
			s.awake.subs = make(map[string]*held)
		}
		h = &held{uris: make(map[string]bool), release: s.sessions.KeepAwake()}
		s.awake.subs[cs.SessionID()] = h
	}
	h.uris[uri] = true
}

// unsubscribe notes that the client of ctx unsubscribed from uri, and
// lets the store sleep once the client holds no subscription.
func (s *Server) unsubscribe(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	s.awake.mu.Lock()
	defer s.awake.mu.Unlock()
	h := s.awake.subs[cs.SessionID()]
	if h == nil {
		return
	}
	delete(h.uris, req.Params.URI)
	if len(h.uris) == 0 {
		h.release()
		delete(s.awake.subs, cs.SessionID())
	}
}

// unsubscribeAll lets go of what the client session id kept awake, once
// it has gone.
func (s *Server) unsubscribeAll(id string) {
	s.awake.mu.Lock()
	defer s.awake.mu.Unlock()
	if h := s.awake.subs[id]; h != nil {
		h.release()
		delete(s.awake.subs, id)
	}
}
