package transport

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioSessionID is the session ID of every stdio session. A stdio server
// has exactly one client, so the ID only has to be unique per MCPServer.
const stdioSessionID = "stdio"

// notificationBuffer is the capacity of a session's notification channel.
// mcp-go drops notifications when the channel is full, so it is generous.
const notificationBuffer = 1024

// errSessionClosed is returned by server→client requests that were pending,
// or started, after the client's input ended.
var errSessionClosed = errors.New("transport: stdio session closed")

// stdioSession is the mcp-go client session for one ServeStdio call. It
// carries the client's identity and log level, and sends server→client
// requests (sampling, elicitation, roots) through the connection's writer.
type stdioSession struct {
	subscriptions
	clientRequests

	notifications chan mcp.JSONRPCNotification
	writer        *stdioWriter

	clientState
	pendingRequests
}

var (
	_ server.ClientSession              = (*stdioSession)(nil)
	_ server.SessionWithLogging         = (*stdioSession)(nil)
	_ server.SessionWithClientInfo      = (*stdioSession)(nil)
	_ server.SessionWithProtocolVersion = (*stdioSession)(nil)
	_ server.SessionWithSampling        = (*stdioSession)(nil)
	_ server.SessionWithElicitation     = (*stdioSession)(nil)
	_ server.SessionWithRoots           = (*stdioSession)(nil)
)

// newStdioSession returns a session with an empty notification channel.
// Its writer must be set before the session is used.
func newStdioSession() *stdioSession {
	s := &stdioSession{
		notifications: make(chan mcp.JSONRPCNotification, notificationBuffer),
	}
	s.clientRequests = clientRequests{c: s}
	return s
}

// SessionID returns "stdio".
func (s *stdioSession) SessionID() string {
	return stdioSessionID
}

// NotificationChannel returns the channel mcp-go queues notifications on.
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
}

// call sends a request to the client through the connection's writer and
// waits for the reply, for ctx to be done, or for the session to close.
func (s *stdioSession) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return s.roundTrip(ctx, method, params, func(req outgoingRequest) error { return s.writer.post(req) })
}
