package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
)

// URIs of the resources every server exposes.
const (
	SessionURI      = "wink://session"
	LogURI          = "wink://session/log"
	CallURITemplate = "wink://session/calls/{call_id}"
)

func callURI(id string) string { return "wink://session/calls/" + id }

// addPrompts offers each enabled top-level section's guidance as a prompt
// named by its key, and the prompts the enabled sections declare.
func (s *Server) addPrompts() {
	for _, sec := range s.tree.Sections() {
		for _, p := range sec.Prompts {
			s.addPrompt(p)
		}
	}
	for _, sec := range s.tree.Roots() {
		text := s.tree.SectionGuidance(sec)
		p := mcp.NewPrompt(sec.Key, mcp.WithPromptDescription(sec.Title+": how to use its tools."))
		s.mcp.AddPrompt(p, func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(sec.Title, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
			}), nil
		})
	}
}

// addPrompt registers a section's prompt. A missing required argument is an
// error (mcp-go reports handler errors as JSON-RPC internal errors).
func (s *Server) addPrompt(p sections.Prompt) {
	opts := []mcp.PromptOption{mcp.WithPromptDescription(p.Description)}
	if p.Title != "" {
		opts = append(opts, mcp.WithPromptTitle(p.Title))
	}
	for _, a := range p.Arguments {
		aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
		if a.Required {
			aopts = append(aopts, mcp.RequiredArgument())
		}
		opts = append(opts, mcp.WithArgument(a.Name, aopts...))
	}
	s.mcp.AddPrompt(mcp.NewPrompt(p.Name, opts...), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		if args == nil {
			args = map[string]string{}
		}
		for _, a := range p.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				return nil, fmt.Errorf("prompt %q: missing required argument %q", p.Name, a.Name)
			}
		}
		u, err := s.use(ctx, s.request(ctx, metaSession(req.Params.Meta), sessions.NeedAny), false)
		if err != nil {
			return nil, sessionError(err)
		}
		defer u.Release()
		msgs, err := p.Get(ctx, u.Session, args)
		if err != nil {
			return nil, err
		}
		out := make([]mcp.PromptMessage, len(msgs))
		for i, m := range msgs {
			out[i] = mcp.NewPromptMessage(mcp.Role(m.Role), m.Content)
		}
		return mcp.NewGetPromptResult(p.Description, out), nil
	})
}

// completions answers completion/complete from the sections' Completions.
type completions struct {
	prompts, templates map[[2]string]sections.Completion // {name or template, argument}
}

func newCompletions(tree *sections.Tree) *completions {
	c := &completions{prompts: map[[2]string]sections.Completion{}, templates: map[[2]string]sections.Completion{}}
	for _, sec := range tree.Sections() {
		for _, comp := range sec.Completions {
			if comp.Prompt != "" {
				c.prompts[[2]string{comp.Prompt, comp.Argument}] = comp
			} else {
				c.templates[[2]string{comp.Template, comp.Argument}] = comp
			}
		}
	}
	return c
}

func (c *completions) empty() bool { return len(c.prompts)+len(c.templates) == 0 }

func (c *completions) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return complete(ctx, c.prompts[[2]string{name, arg.Name}], arg, cc)
}

func (c *completions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return complete(ctx, c.templates[[2]string{uri, arg.Name}], arg, cc)
}

// maxCompletions is the most values a completion result may carry.
const maxCompletions = 100

func complete(ctx context.Context, comp sections.Completion, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	out := &mcp.Completion{Values: []string{}}
	if comp.Complete == nil {
		return out, nil
	}
	vals, err := comp.Complete(ctx, arg.Value, cc.Arguments)
	if err != nil {
		return nil, err
	}
	if len(vals) > maxCompletions {
		out.Total, out.HasMore = len(vals), true
		vals = vals[:maxCompletions]
	}
	out.Values = append(out.Values, vals...)
	return out, nil
}

// addResources exposes the handle of the connection's session, the
// session's call log and each call's record (both from the store, see
// callLog), and the sections' own resources.
func (s *Server) addResources() {
	s.mcp.AddResource(
		mcp.NewResource(SessionURI, "Session",
			mcp.WithResourceDescription("The handle of this connection's session: pass it as 'session' to continue the session from a client without a connection."),
			mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			u, err := s.use(ctx, s.request(ctx, metaSession(req.Params.Meta), sessions.NeedExisting), false)
			if errors.Is(err, sessions.ErrNoSession) {
				return nil, resourceNotFound(ctx, req.Params.URI, ": this request has no session")
			}
			if err != nil {
				return nil, sessionError(err)
			}
			u.Release()
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: u.Handle}}, nil
		})
	s.addResource(
		mcp.NewResource(LogURI, "Invocation log",
			mcp.WithResourceDescription("The tool calls of this session that the store keeps, oldest first: tool, outcome, start, duration and the start of the arguments. "+CallURITemplate+" holds a call's whole record."),
			mcp.WithMIMEType("application/json")),
		func(ctx context.Context, sess *session.Session) (string, error) {
			sums, err := s.sessions.Summaries(ctx, sess.ID(), math.MaxInt)
			if err != nil {
				return "", err
			}
			return marshal(sums)
		}, false)
	s.addTemplate(
		mcp.NewResourceTemplate(CallURITemplate, "Tool call",
			mcp.WithTemplateDescription("One tool call of this session, with its full value."),
			mcp.WithTemplateMIMEType("application/json")),
		func(ctx context.Context, sess *session.Session, _ string, args map[string]string) (string, error) {
			text, err := s.sessions.Find(ctx, sess.ID(), args["call_id"])
			if errors.Is(err, sessions.ErrNoRecord) {
				err = sections.ErrNotFound
			}
			return text, err
		}, false)
	for _, sec := range s.tree.Sections() {
		for _, r := range sec.Resources {
			s.addResource(mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(r.MIMEType)), r.Read, r.Blob)
		}
		for _, rt := range sec.Templates {
			s.addTemplate(mcp.NewResourceTemplate(rt.URITemplate, rt.Name, mcp.WithTemplateDescription(rt.Description), mcp.WithTemplateMIMEType(rt.MIMEType)), rt.Read, rt.Blob)
		}
	}
}

// reader is how the server reads a resource of a session's state, for a
// client (readTemplate) and to tell whether a change reached it (content).
type reader func(ctx context.Context, sess *session.Session, uri string, args map[string]string) (string, error)

// resource is a resource or template of a session's state that the server
// exposes: the arguments of a URI it matches, and its reader.
type resource struct {
	match func(uri string) (map[string]string, bool)
	read  reader
}

func (s *Server) addResource(r mcp.Resource, read func(context.Context, *session.Session) (string, error), blob bool) {
	rd := func(ctx context.Context, sess *session.Session, _ string, _ map[string]string) (string, error) {
		return read(ctx, sess)
	}
	s.resources = append(s.resources, resource{
		match: func(uri string) (map[string]string, bool) { return nil, uri == r.URI },
		read:  rd,
	})
	s.mcp.AddResource(r, mcpserver.ResourceHandlerFunc(s.readTemplate(rd, r.MIMEType, blob)))
}

func (s *Server) addTemplate(t mcp.ResourceTemplate, read reader, blob bool) {
	s.resources = append(s.resources, resource{
		match: func(uri string) (map[string]string, bool) {
			if !t.URITemplate.Regexp().MatchString(uri) {
				return nil, false
			}
			vars := map[string]any{}
			for name, v := range t.URITemplate.Match(uri) {
				vars[name] = v.V
			}
			return templateArgs(vars), true
		},
		read: read,
	})
	s.mcp.AddResourceTemplate(t, s.readTemplate(read, t.MIMEType, blob))
}

// content reads resource uri of sess as a client would. It fails with
// errNoReader for a URI that is not one of a session's state.
func (s *Server) content(ctx context.Context, sess *session.Session, uri string) (string, error) {
	for _, r := range s.resources {
		if args, ok := r.match(uri); ok {
			return r.read(s.withHistory(ctx, sess), sess, uri, args)
		}
	}
	return "", errNoReader
}

// withHistory returns ctx carrying the history of sess as the store holds
// it, for a resource read, when the server keeps histories.
func (s *Server) withHistory(ctx context.Context, sess *session.Session) context.Context {
	if h := s.sessions.History(sess.ID()); h != nil {
		return session.WithHistory(ctx, h)
	}
	return ctx
}

var errNoReader = errors.New("not a resource of a session's state")

func (s *Server) readTemplate(read reader, mime string, blob bool) mcpserver.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		u, err := s.use(ctx, s.request(ctx, metaSession(req.Params.Meta), sessions.NeedAny), true)
		if err != nil {
			return nil, sessionError(err)
		}
		defer u.Release()
		text, err := read(s.withHistory(ctx, u.Session), u.Session, req.Params.URI, templateArgs(req.Params.Arguments))
		if errors.Is(err, sections.ErrNotFound) {
			return nil, resourceNotFound(ctx, req.Params.URI, "")
		}
		if err != nil {
			return nil, err
		}
		if blob {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: req.Params.URI, MIMEType: mime, Blob: base64.StdEncoding.EncodeToString([]byte(text))}}, nil
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}, nil
	}
}

// templateArgs returns the values a URI template matched, the first of
// each list.
func templateArgs(vars map[string]any) map[string]string {
	args := map[string]string{}
	for k, v := range vars {
		switch v := v.(type) {
		case string:
			args[k] = v
		case []string:
			if len(v) > 0 {
				args[k] = v[0]
			}
		}
	}
	return args
}

// sessionError is the error a prompt or resource handler returns when
// finding the request's session failed with err: the client reads its
// message.
func sessionError(err error) error {
	if msg := sessions.Message(err); msg != "" {
		return errors.New(msg)
	}
	return err
}

func marshal(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
