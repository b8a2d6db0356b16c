package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
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
// resources may have changed: notifications/resources/updated for each
// resource each of them subscribed to, sent to the client session as a
// whole (over Streamable HTTP, on its standalone GET stream), not with a
// call's response.
func (m *Sessions) notify(h string) {
	m.mu.Lock()
	var subs []mcpserver.SessionWithResourceSubscriptions
	for _, id := range m.connsOf[h] {
		if s, ok := m.registered[id].(mcpserver.SessionWithResourceSubscriptions); ok {
			subs = append(subs, s)
		}
	}
	m.mu.Unlock()
	for _, s := range subs {
		for _, uri := range s.SubscribedResources() {
			if err := m.mcp.SendNotificationToSpecificClient(s.SessionID(), string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
				m.logger.Debug("sending resources/updated failed", "uri", uri, "err", err)
			}
		}
	}
}
