package server

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Progressive disclosure (package sections): the tools of a closed section
// are registered like any other, so that a call of one reaches the
// pipeline, where disclose answers it with sections.ClosedMessage until its
// session has opened the section; tools/list leaves them out for such a
// session (listed). A successful open_section tells the session's
// clients that the list changed (toolsChanged): notifications/tools/list_changed
// to each connection whose session it is, and to each 2026-07-28 client
// listening (subscriptions/listen, for toolsListChanged) with the session's
// handle in the listen request's _meta under MetaSession.
//
// A 2026-07-28 request has no connection, so its tools/list lists the
// tools a fresh session sees (the sections open by default, and
// open_section) unless its _meta names a session under MetaSession: it
// then lists that session's tools. Its calls that name the session run the
// tools of the sections the session opened; open_section without a handle
// starts a session, whose handle its result names. (A read-only tool
// called with no session at all is answered NoSessionMessage before the
// pipeline, as ever.)

// disclose refuses a call of a tool that a closed section hides from the
// call's session. It reads the session as it stands when the call comes
// in, before the call takes the session's lock: a call that races the
// open_section call opening its section may still be refused.
func (s *Server) disclose(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Outcome {
		if sec := s.tree.Hides(call.Tool, call.Session); sec != nil {
			return tools.Failure(tools.ClassPolicy, sections.ClosedMessage(call.Tool, sec))
		}
		return next(ctx, call)
	}
}

// listed removes from a tools/list result the tools hidden from the
// request's session (Sessions.peek): those of the sections it has not
// opened, and those Options.ToolFilter reports false for.
func (s *Server) listed(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	sess, release := s.peek(ctx, metaSession(req.Params.Meta))
	defer release()
	var h string
	if sess != nil {
		h = sess.ID()
	}
	res.Tools = slices.DeleteFunc(res.Tools, func(mt mcp.Tool) bool {
		t := s.byName[mt.Name]
		return t != nil && (s.tree.Hides(t, sess) != nil || s.toolFilter != nil && !s.toolFilter(ctx, t, h))
	})
}

// peek returns, in use, the session a request that named handle ("" for
// none) would use, without starting one: the session handle names, if the
// request's principal may use it; otherwise its connection's session, if
// the connection has started it or the process names it (--session).
// Otherwise it returns nil, a session that has opened nothing.
func (s *Server) peek(ctx context.Context, handle string) (*session.Session, func()) {
	r := s.request(ctx, handle, sessions.NeedExisting)
	if handle == "" && !s.sessions.Started(r.Conn, r.Name) {
		return nil, func() {}
	}
	u, err := s.use(ctx, r, false)
	if err != nil {
		return nil, func() {}
	}
	return u.Session, u.Release
}

// listen records a 2026-07-28 client listening (subscriptions/listen) with
// the handle of a session its principal may use in the request's _meta
// under MetaSession, so that toolsChanged reaches it until unlisten.
func (s *Server) listen(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
	cs, h := mcpserver.ClientSessionFromContext(ctx), metaSession(req.Params.Meta)
	if cs == nil || h == "" {
		return
	}
	u, err := s.use(ctx, s.request(ctx, h, sessions.NeedExisting), false)
	if err != nil {
		return
	}
	u.Release()
	s.clients.mu.Lock()
	defer s.clients.mu.Unlock()
	s.clients.listeners[u.Handle] = append(s.clients.listeners[u.Handle], cs)
}

// unlisten forgets the listening client of ctx, whose stream has ended.
func (s *Server) unlisten(ctx context.Context) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	s.clients.mu.Lock()
	defer s.clients.mu.Unlock()
	for h, ls := range s.clients.listeners {
		if ls = slices.DeleteFunc(ls, func(l mcpserver.ClientSession) bool { return l == cs }); len(ls) == 0 {
			delete(s.clients.listeners, h)
		} else {
			s.clients.listeners[h] = ls
		}
	}
}

// toolsChanged sends notifications/tools/list_changed to the clients of
// the session h: the connections whose session it is, and the clients
// listening with its handle that asked for the notification.
func (s *Server) toolsChanged(h string) {
	conns := s.sessions.Conns(h)
	s.clients.mu.Lock()
	listeners := slices.Clone(s.clients.listeners[h])
	s.clients.mu.Unlock()
	method := string(mcp.MethodNotificationToolsListChanged)
	for _, id := range conns {
		if err := s.mcp.SendNotificationToSpecificClient(id, method, nil); err != nil {
			s.logger.Debug("sending tools/list_changed failed", "err", err)
		}
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
	for _, l := range listeners {
		if f, ok := l.(mcpserver.SessionWithSubscriptionFilter); ok {
			if filter, active := f.SubscriptionFilter(); !active || !filter.ToolsListChanged {
				continue
			}
		}
		select {
		case l.NotificationChannel() <- n:
		default:
			s.logger.Debug("sending tools/list_changed failed: the stream's queue is full")
		}
	}
}
