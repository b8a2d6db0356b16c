package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// outgoingRequest is a JSON-RPC request from the server to the client.
type outgoingRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

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

// pendingRequests are a session's server→client requests (sampling,
// elicitation, roots) waiting for the client's replies. The zero value is
// ready to use.
type pendingRequests struct {
	nextID atomic.Int64

	mu     sync.Mutex
	calls  map[int64]pendingCall
	closed error // set once no request is accepted
}

// register allocates an ID for a request and records it as pending. It
// fails once fail has been called.
func (p *pendingRequests) register(method string) (int64, chan clientReply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed != nil {
		return 0, nil, p.closed
	}
	if p.calls == nil {
		p.calls = map[int64]pendingCall{}
	}
	id := p.nextID.Add(1)
	replies := make(chan clientReply, 1)
	p.calls[id] = pendingCall{method: method, replies: replies}
	return id, replies, nil
}

// roundTrip sends a request with a fresh ID through send and waits for the
// client's reply with that ID, for ctx to be done, or for fail.
func (p *pendingRequests) roundTrip(ctx context.Context, method string, params any, send func(outgoingRequest) error) (json.RawMessage, error) {
	id, replies, err := p.register(method)
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", method, err)
	}
	defer p.forget(id)
	if err := send(outgoingRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("send %s request: %w", method, err)
	}
	select {
	case reply := <-replies:
		return reply.result, reply.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s request: %w", method, ctx.Err())
	}
}

// forget removes a request, if it is still pending.
func (p *pendingRequests) forget(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.calls, id)
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

// deliver hands a client's response to the request with its ID; it
// reports false if msg is not the response to a pending request.
func (p *pendingRequests) deliver(msg []byte) bool {
	var resp incomingResponse
	if err := json.Unmarshal(msg, &resp); err != nil {
		return false
	}
	var id int64
	if err := json.Unmarshal(resp.ID, &id); err != nil {
		return false
	}
	p.mu.Lock()
	call, ok := p.calls[id]
	delete(p.calls, id)
	p.mu.Unlock()
	if !ok {
		return false
	}
	call.replies <- replyFrom(call.method, resp)
	return true
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

// fail fails every pending request with err and makes later ones fail at
// once. Only the first call has an effect.
func (p *pendingRequests) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed != nil {
		return
	}
	p.closed = err
	for id, call := range p.calls {
		call.replies <- clientReply{err: fmt.Errorf("%s request: %w", call.method, err)}
		delete(p.calls, id)
	}
}
