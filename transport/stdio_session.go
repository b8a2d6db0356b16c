package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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

// clientReply is the client's answer to a server→client request.
type clientReply struct {
	result json.RawMessage
	err    error
}

// pendingCall is a server→client request waiting for the client's reply.
type pendingCall struct {
	method  string
	replies chan clientReply // buffered; receives exactly one reply
}

// stdioSession is the mcp-go client session for one ServeStdio call. It
// carries the client's identity and log level, and sends server→client
// requests (sampling, elicitation, roots) through the connection's writer.
type stdioSession struct {
	subscriptions
	clientRequests

	notifications chan mcp.JSONRPCNotification
	writer        *frameWriter

	clientState

	nextID atomic.Int64

	mu       sync.Mutex
	pending  map[int64]pendingCall
	closeErr error // set once the session no longer accepts replies
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
		pending:       make(map[int64]pendingCall),
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

// outgoingRequest is a JSON-RPC request from the server to the client.
type outgoingRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// call sends a request with a fresh id to the client and waits for the
// reply with that id, for ctx to be done, or for the session to close.
func (s *stdioSession) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, replies, err := s.register(method)
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", method, err)
	}
	defer s.forget(id)
	req := outgoingRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params}
	if err := s.writer.send(req); err != nil {
		return nil, fmt.Errorf("send %s request: %w", method, err)
	}
	select {
	case reply := <-replies:
		return reply.result, reply.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s request: %w", method, ctx.Err())
	}
}

// register allocates an id for a server→client request and records it as
// pending. It fails once the session is closed.
func (s *stdioSession) register(method string) (int64, chan clientReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeErr != nil {
		return 0, nil, s.closeErr
	}
	id := s.nextID.Add(1)
	replies := make(chan clientReply, 1)
	s.pending[id] = pendingCall{method: method, replies: replies}
	return id, replies, nil
}

// forget removes a pending request, if it is still pending.
func (s *stdioSession) forget(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
}

// incomingResponse is a JSON-RPC response from the client.
type incomingResponse struct {
	ID     json.RawMessage  `json:"id"`
	Result json.RawMessage  `json:"result"`
	Error  *json.RawMessage `json:"error"`
}

// rpcErrorBody is the error member of a JSON-RPC error response.
type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// deliver hands a response from the client to the pending request with the
// same id. It reports false if msg is not such a response.
func (s *stdioSession) deliver(msg []byte) bool {
	var resp incomingResponse
	if err := json.Unmarshal(msg, &resp); err != nil {
		return false
	}
	var id int64
	if err := json.Unmarshal(resp.ID, &id); err != nil {
		return false
	}
	call, ok := s.take(id)
	if !ok {
		return false
	}
	call.replies <- replyFrom(call.method, resp)
	return true
}

// take removes and returns the pending request with the given id.
func (s *stdioSession) take(id int64) (pendingCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	call, ok := s.pending[id]
	delete(s.pending, id)
	return call, ok
}

// replyFrom converts a client response into a reply for a request of the
// given method.
func replyFrom(method string, resp incomingResponse) clientReply {
	if resp.Error != nil {
		var body rpcErrorBody
		if err := json.Unmarshal(*resp.Error, &body); err != nil {
			return clientReply{err: fmt.Errorf("%s request failed: malformed error %s", method, *resp.Error)}
		}
		return clientReply{err: fmt.Errorf("%s request failed: client error %d: %s", method, body.Code, body.Message)}
	}
	if resp.Result == nil {
		return clientReply{err: fmt.Errorf("%s request failed: response has neither result nor error", method)}
	}
	return clientReply{result: resp.Result}
}

// close fails every pending server→client request with err and makes later
// requests fail immediately.
func (s *stdioSession) close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeErr != nil {
		return
	}
	s.closeErr = err
	for id, call := range s.pending {
		call.replies <- clientReply{err: fmt.Errorf("%s request: %w", call.method, err)}
		delete(s.pending, id)
	}
}
