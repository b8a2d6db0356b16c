package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/telemetry"
	"github.com/wink-mcp/wink-mcp/tools"
)

// The server finds the session of a request through package sessions,
// from what MCP says of the request: the handle it names (the "session"
// argument, or _meta), the connection it came on (its client session: a
// stdio process serves every protocol version, a 2025-11-25 HTTP or SSE
// session its own requests; a 2026-07-28 request over HTTP has none), the
// name the process gives the connection's session (WithSessionName), and
// its principal (package identity).

// DefaultSessionTTL is how long a session named by a handle alone may be
// idle when Options.SessionTTL is zero.
const DefaultSessionTTL = sessions.DefaultTTL

// CheckSessionName reports whether name may name a session (the --session
// flag): 1 to 128 letters, digits, '-' or '_', the first a letter or
// digit.
func CheckSessionName(name string) error { return sessions.CheckName(name) }

type sessionNameKey struct{}

// WithSessionName returns ctx naming the implicit session of the
// connection its requests arrive on: the connection's first request
// resumes the session called name, or starts it under that name. A stdio
// transport sets it on every request (--session); without it a
// connection's session gets a fresh handle.
func WithSessionName(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, sessionNameKey{}, name)
}

type endedKey struct{}

// ClientEnded returns ctx, for mcp-go's UnregisterSession, saying that
// the client ended its session (an HTTP DELETE), so that the session's
// state ends with it (sessions.Manager.End).
func ClientEnded(ctx context.Context) context.Context {
	return context.WithValue(ctx, endedKey{}, true)
}

// clients holds the client sessions registered with mcp-go: the
// connections (a stdio process, an Mcp-Session-Id, an SSE stream). A
// request of the 2026-07-28 era over HTTP has a client session of its own
// that is never registered.
type clients struct {
	mu         sync.Mutex
	registered map[string]mcpserver.ClientSession
	// listeners holds, by handle, the 2026-07-28 clients listening for
	// changes of the session it names (listen).
	listeners map[string][]mcpserver.ClientSession
}

func (c *clients) register(cs mcpserver.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered[cs.SessionID()] = cs
}

func (c *clients) isRegistered(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered[id] != nil
}

func (c *clients) get(id string) mcpserver.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered[id]
}

// unregistered lets go of the client session id, which has gone, and of
// its implicit session (sessions.Manager.End).
func (s *Server) unregistered(ctx context.Context, cs mcpserver.ClientSession) {
	final, _ := ctx.Value(endedKey{}).(bool)
	s.clients.mu.Lock()
	delete(s.clients.registered, cs.SessionID())
	s.clients.mu.Unlock()
	s.forgetSeen(cs.SessionID())
	s.unsubscribeAll(cs.SessionID())
	s.sessions.End(cs.SessionID(), final)
}

// use is s.sessions.Use (s.sessions.Read for a read), which also names
// the session on the span of ctx's request, when it is traced, by its
// identifier (session.LogID): a handle is a credential, and never leaves
// the process.
func (s *Server) use(ctx context.Context, r sessions.Request, read bool) (*sessions.Use, error) {
	var u *sessions.Use
	var err error
	if read {
		u, err = s.sessions.Read(ctx, r)
	} else {
		u, err = s.sessions.Use(ctx, r)
	}
	if err == nil && s.tracer != nil && u.Handle != "" && trace.SpanFromContext(ctx).IsRecording() {
		telemetry.SetSession(ctx, session.LogID(u.Handle))
	}
	return u, err
}

// request returns what the request of ctx, which named handle ("" for
// none), tells package sessions of the session it uses.
func (s *Server) request(ctx context.Context, handle string, n sessions.Need) sessions.Request {
	id, _ := identity.From(ctx)
	r := sessions.Request{Handle: handle, Owner: id.Principal(), Need: n}
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil && (!mcpserver.IsModernRequest(ctx) || s.clients.isRegistered(cs.SessionID())) {
		r.Conn = cs.SessionID()
		r.Name, _ = ctx.Value(sessionNameKey{}).(string)
	}
	return r
}

// sessionFailed is the result of a call of t whose session could not be
// found or started: err says why, which may be that the call was
// cancelled or ran out of time meanwhile.
func (s *Server) sessionFailed(t *tools.Tool, err error) *mcp.CallToolResult {
	msg := sessions.Message(err)
	switch {
	case msg != "":
	case errors.Is(err, context.Canceled):
		msg = fmt.Sprintf("Tool '%s' was cancelled.", t.Name())
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("Deadline expired before executing tool '%s'.", t.Name())
	default:
		s.logger.Error("creating a session failed", "err", err)
		msg = fmt.Sprintf("Tool '%s' failed: session unavailable", t.Name())
	}
	return mcp.NewToolResultError(msg)
}

// useKey is the context key of the session a call uses (a
// *sessions.Use), through which its stages check and commit it.
type useKey struct{}

// useOf returns the session the call of ctx uses, or nil.
func useOf(ctx context.Context) *sessions.Use {
	u, _ := ctx.Value(useKey{}).(*sessions.Use)
	return u
}
