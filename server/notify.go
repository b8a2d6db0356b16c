package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
)

// notifier sends a call's progress and log notifications to the client that
// made it, through the request's context so that they travel on the same
// stream as the response.
type notifier struct {
	srv   *mcpserver.MCPServer
	token mcp.ProgressToken
}

// Progress sends notifications/progress when the request carried a
// progress token.
func (n notifier) Progress(ctx context.Context, progress, total float64, message string) error {
	if n.token == nil {
		return nil
	}
	params := map[string]any{"progressToken": n.token, "progress": progress}
	if total > 0 {
		params["total"] = total
	}
	if message != "" {
		params["message"] = message
	}
	return n.srv.SendNotificationToClient(ctx, "notifications/progress", params)
}

// Log sends notifications/message when the client asked for log messages at
// this level.
func (n notifier) Log(ctx context.Context, level string, data any) error {
	err := n.srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevel(level), "wink-mcp", data))
	if err == mcpserver.ErrSessionDoesNotSupportLogging {
		return nil
	}
	return err
}

// notify tells the clients whose connection's session is h that its
// resources changed: notifications/resources/updated for resources they
// subscribed to, sent to the client session as a whole (over Streamable
// HTTP, on its standalone GET stream), not with a call's response. When
// the change was made here, sess is the session after it, and a client is
// told only of the resources whose content in sess differs from what it
// held when the client was last told of it or subscribed to it (look).
// When another process made it (sess is nil), every client is told of
// every resource it subscribed to, and what they held is forgotten.
func (s *Server) notify(h string, sess *session.Session) {
	var subs []mcpserver.SessionWithResourceSubscriptions
	for _, id := range s.sessions.Conns(h) {
		if c, ok := s.clients.get(id).(mcpserver.SessionWithResourceSubscriptions); ok {
			subs = append(subs, c)
		}
	}
	if len(subs) == 0 {
		return
	}
	s.seen.looking.Lock()
	defer s.seen.looking.Unlock()
	for _, c := range subs {
		if sess == nil {
			s.forgetSeen(c.SessionID())
		}
		for _, uri := range c.SubscribedResources() {
			if sess != nil && !s.look(c.SessionID(), uri, sess) {
				continue
			}
			if err := s.mcp.SendNotificationToSpecificClient(c.SessionID(), string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
				s.logger.Debug("sending resources/updated failed", "uri", uri, "err", err)
			}
		}
	}
}

// seen holds, by client session ID and URI, the digest of the content a
// client was last told of or subscribed to; looking orders the reads
// that record them (notify).
type seen struct {
	mu      sync.Mutex
	digests map[string]map[string][sha256.Size]byte
	looking sync.Mutex
}

// subscribed records what the resource uri holds for the client of ctx,
// which has just subscribed to it, in the session its reads use.
func (s *Server) subscribed(ctx context.Context, uri string) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	u, err := s.use(ctx, s.request(ctx, "", sessions.NeedAny), true)
	if err != nil {
		return
	}
	defer u.Release()
	s.seen.looking.Lock()
	defer s.seen.looking.Unlock()
	s.look(cs.SessionID(), uri, u.Session)
}

// lookTimeout bounds look's read of a resource (from the store, for the
// call log): one that fails counts as a change.
const lookTimeout = 5 * time.Second

// look reads resource uri in sess and records its digest for the client
// session id. It reports whether the content differs from the one recorded
// before, or could not be compared (none recorded, or a read that failed).
// The caller holds s.seen.looking, so that the digest recorded last is
// that of the latest content.
func (s *Server) look(id, uri string, sess *session.Session) bool {
	ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
	defer cancel()
	text, err := s.content(ctx, sess, uri)
	switch {
	case errors.Is(err, sections.ErrNotFound):
		text = "\x00not found"
	case err != nil:
		s.seen.mu.Lock()
		delete(s.seen.digests[id], uri)
		s.seen.mu.Unlock()
		return true
	}
	d := sha256.Sum256([]byte(text))
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	seen := s.seen.digests[id]
	if seen == nil {
		seen = map[string][sha256.Size]byte{}
		s.seen.digests[id] = seen
	}
	old, had := seen[uri]
	seen[uri] = d
	return !had || old != d
}

// forgetSeen forgets the digests recorded for the client session id.
func (s *Server) forgetSeen(id string) {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	delete(s.seen.digests, id)
}
