package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
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
func (m *Sessions) notify(h string, sess *session.Session) {
	m.mu.Lock()
	var subs []mcpserver.SessionWithResourceSubscriptions
	for _, id := range m.connsOf[h] {
		if s, ok := m.registered[id].(mcpserver.SessionWithResourceSubscriptions); ok {
			subs = append(subs, s)
		}
	}
	m.mu.Unlock()
	m.looking.Lock()
	defer m.looking.Unlock()
	for _, s := range subs {
		if sess == nil {
			m.forgetSeen(s.SessionID())
		}
		for _, uri := range s.SubscribedResources() {
			if sess != nil && !m.look(s.SessionID(), uri, sess) {
				continue
			}
			if err := m.mcp.SendNotificationToSpecificClient(s.SessionID(), string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
				m.logger.Debug("sending resources/updated failed", "uri", uri, "err", err)
			}
		}
	}
}

// subscribed records what the resource uri holds for the client of ctx,
// which has just subscribed to it, in the session its reads use.
func (m *Sessions) subscribed(ctx context.Context, uri string) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	u, err := m.forRead(ctx, "", needAny)
	if err != nil {
		return
	}
	defer u.release()
	m.looking.Lock()
	defer m.looking.Unlock()
	m.look(cs.SessionID(), uri, u.sess)
}

// lookTimeout bounds look's read of a resource (from the store, for the
// call log): one that fails counts as a change.
const lookTimeout = 5 * time.Second

// look reads resource uri in sess and records its digest for the client
// session id. It reports whether the content differs from the one recorded
// before, or could not be compared (none recorded, or a read that failed).
// The caller holds m.looking, so that the digest recorded last is that of
// the latest content.
func (m *Sessions) look(id, uri string, sess *session.Session) bool {
	ctx, cancel := context.WithTimeout(m.ctx, lookTimeout)
	defer cancel()
	text, err := m.content(ctx, sess, uri)
	switch {
	case errors.Is(err, sections.ErrNotFound):
		text = "\x00not found"
	case err != nil:
		m.mu.Lock()
		delete(m.seen[id], uri)
		m.mu.Unlock()
		return true
	}
	d := sha256.Sum256([]byte(text))
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.seen[id]
	if seen == nil {
		seen = map[string][sha256.Size]byte{}
		m.seen[id] = seen
	}
	old, had := seen[uri]
	seen[uri] = d
	return !had || old != d
}

// forgetSeen forgets the digests recorded for the client session id.
func (m *Sessions) forgetSeen(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, id)
}
