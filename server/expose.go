package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
)

// URIs of the resources every server exposes.
const (
	LogURI          = "wink://session/log"
	CallURITemplate = "wink://session/calls/{call_id}"
)

func callURI(id string) string { return "wink://session/calls/" + id }

// addPrompts offers each enabled top-level section's guidance as a prompt
// named by its key.
func (s *Server) addPrompts() {
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

// addResources exposes the session's invocation log, each call's record,
// and the sections' own resources.
func (s *Server) addResources() {
	s.mcp.AddResource(
		mcp.NewResource(LogURI, "Invocation log",
			mcp.WithResourceDescription("Every tool call of this session: tool, arguments, outcome, duration."),
			mcp.WithMIMEType("application/json")),
		s.readResource(func(_ context.Context, sess *session.Session) (string, error) {
			return marshal(session.Entries(sess, session.Invocations))
		}, "application/json"))
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(CallURITemplate, "Tool call",
			mcp.WithTemplateDescription("One tool call of this session, with its full value."),
			mcp.WithTemplateMIMEType("application/json")),
		s.readTemplate(func(_ context.Context, sess *session.Session, _ string, args map[string]string) (string, error) {
			for _, ev := range session.Entries(sess, session.Invocations) {
				if ev.CallID == args["call_id"] {
					return marshal(ev)
				}
			}
			return "", sections.ErrNotFound
		}, "application/json"))
	for _, sec := range s.tree.Sections() {
		for _, r := range sec.Resources {
			s.mcp.AddResource(
				mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(r.MIMEType)),
				s.readResource(r.Read, r.MIMEType))
		}
		for _, rt := range sec.Templates {
			s.mcp.AddResourceTemplate(
				mcp.NewResourceTemplate(rt.URITemplate, rt.Name, mcp.WithTemplateDescription(rt.Description), mcp.WithTemplateMIMEType(rt.MIMEType)),
				s.readTemplate(rt.Read, rt.MIMEType))
		}
	}
}

func (s *Server) readResource(read func(context.Context, *session.Session) (string, error), mime string) mcpserver.ResourceHandlerFunc {
	return mcpserver.ResourceHandlerFunc(s.readTemplate(func(ctx context.Context, sess *session.Session, _ string, _ map[string]string) (string, error) {
		return read(ctx, sess)
	}, mime))
}

func (s *Server) readTemplate(read func(context.Context, *session.Session, string, map[string]string) (string, error), mime string) mcpserver.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		sess, err := s.sessions.ForContext(ctx)
		if err != nil {
			return nil, err
		}
		args := map[string]string{}
		for k, v := range req.Params.Arguments {
			switch v := v.(type) {
			case string:
				args[k] = v
			case []string:
				if len(v) > 0 {
					args[k] = v[0]
				}
			}
		}
		text, err := read(ctx, sess, req.Params.URI, args)
		if errors.Is(err, sections.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", req.Params.URI, mcpserver.ErrResourceNotFound)
		}
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}, nil
	}
}

func marshal(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
