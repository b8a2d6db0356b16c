// Package sections arranges tools in an ordered tree of sections. A section
// bundles guidance text for the model with the tools it explains and the
// policies that govern them; the tree decides which tools are offered, in
// what order, and renders the guidance the server hands to clients as its
// instructions. A top-level section may start closed (disclosure.go): the
// instructions then summarise it, and a session lists its tools once it
// has opened it with the open_section tool the tree adds.
package sections

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Section is a node of the tree.
type Section struct {
	// Key identifies the section: ^[a-z0-9][a-z0-9._-]{0,63}$.
	Key string
	// Title is the heading of the section's guidance.
	Title string
	// Guidance is a text/template rendered with Data.
	Guidance string
	// Data is the template's data.
	Data any
	// Enabled reports whether the section is on; nil means always. It is
	// asked once, by NewTree. A disabled section contributes neither
	// guidance nor tools, nor do its children.
	Enabled func() bool
	// Children are nested sections, in order.
	Children []*Section
	// Tools are the section's tools, in order.
	Tools []*tools.Tool
	// Policies govern the section's own tools.
	Policies []policy.Policy
	// Resources and Templates expose the section's state to clients.
	Resources []Resource
	Templates []ResourceTemplate
	// Prompts are prompt templates the section offers besides its
	// guidance prompt.
	Prompts []Prompt
	// Completions suggest values for the arguments of prompts and resource
	// templates (completion/complete).
	Completions []Completion
	// Setup registers the section's reducers, codecs and per-session
	// resources.
	Setup func(*session.Registry)
	// Stateless says the section's tools keep nothing in the session
	// between calls (fixtures, pure functions). The tools of every other
	// section keep state: the server adds the optional "session" argument
	// to their input schemas and names the session in the results of
	// those that change it (see package server).
	Stateless bool
	// Closed says the section starts closed (progressive disclosure): the
	// instructions hold only its summary, the first paragraph of its
	// guidance, and its tools, and those of its children, are listed only
	// to a session that has opened it with the open_section tool (see
	// disclosure.go). Only a top-level section may be closed.
	Closed bool
	// Contained says the section's tools change nothing outside the
	// session's state: no file on disk, no request to another system. A
	// call of one of them whose commit lost the race to another writer of
	// the session is run again on the session's new state instead of
	// failing (see package server); a call of any other tool is never run
	// twice.
	Contained bool
	// Tasks says the section's tools may run long, and a client may run
	// a call of one of them as a task (see package server).
	Tasks bool
}

// Resource is a fixed-URI view of session state.
type Resource struct {
	URI, Name, Description, MIMEType string
	// Blob says Read returns raw bytes, sent base64-encoded as a blob;
	// otherwise it returns text.
	Blob bool
	// Read returns the resource's text for session s.
	Read func(ctx context.Context, s *session.Session) (string, error)
}

// ResourceTemplate is a family of resources named by an RFC 6570 URI
// template.
type ResourceTemplate struct {
	URITemplate, Name, Description, MIMEType string
	// Blob says Read returns raw bytes, sent base64-encoded as a blob.
	Blob bool
	// Read returns the text of the resource uri, whose template variables
	// are in args.
	Read func(ctx context.Context, s *session.Session, uri string, args map[string]string) (string, error)
}

// Prompt is a prompt template: named arguments in, messages out.
type Prompt struct {
	// Name identifies the prompt; it must not clash with a section key.
	Name, Title, Description string
	// Arguments are the prompt's arguments, in order.
	Arguments []PromptArgument
	// Get returns the prompt's messages for the given arguments; required
	// arguments are present when it is called.
	Get func(ctx context.Context, s *session.Session, args map[string]string) ([]PromptMessage, error)
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name, Description string
	Required          bool
}

// PromptMessage is one message of a prompt: a role ("user" or "assistant")
// and one content block (text, image, audio, embedded resource).
type PromptMessage struct {
	Role    string
	Content mcp.Content
}

// Completion suggests values for one argument of a prompt or resource
// template.
type Completion struct {
	// Prompt names the prompt, or Template the resource template (its URI
	// template), whose argument this completes.
	Prompt, Template string
	// Argument is the argument's name.
	Argument string
	// Complete returns suggestions for value, the argument's text so far;
	// context holds the values of the arguments already given.
	Complete func(ctx context.Context, value string, context map[string]string) ([]string, error)
}

// ErrNotFound is returned by resource readers for a resource that does not
// exist.
var ErrNotFound = errors.New("resource not found")

func (s *Section) enabled() bool { return s.Enabled == nil || s.Enabled() }

var keyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Tree is a validated section tree.
type Tree struct {
	roots    []*Section
	enabled  []*Section // depth-first, enabled only
	on       map[*Section]bool
	owner    map[*tools.Tool]*Section
	guidance map[*Section]string
	closed   map[string]*Section      // the enabled closed sections, by key
	hider    map[*tools.Tool]*Section // the closed section each hidden tool is under
	opener   *tools.Tool              // open_section, when a section is closed
}

// NewTree validates roots and renders their guidance. It fails, naming the
// section and tool, on a bad key, a tool that breaks the naming, description
// or example rules, a tool name used twice anywhere in the tree (enabled or
// not), a guidance template that does not render, or a closed section that
// is not at the top. When an enabled section is closed, the tree starts with
// the section of the open_section tool (see disclosure.go).
func NewTree(roots ...*Section) (*Tree, error) {
	t := &Tree{
		on: map[*Section]bool{}, owner: map[*tools.Tool]*Section{}, guidance: map[*Section]string{},
		closed: map[string]*Section{}, hider: map[*tools.Tool]*Section{},
	}
	var closed []string
	for _, r := range roots {
		if r.Closed && r.enabled() {
			t.closed[r.Key] = r
			closed = append(closed, r.Key)
		}
	}
	if len(closed) > 0 {
		roots = append([]*Section{t.disclosure(closed)}, roots...)
	}
	t.roots = roots
	var errs []error
	byName := map[string]string{} // tool name -> path of the section declaring it
	keys := map[string]bool{}
	var walk func(path string, s *Section, on bool, hider *Section)
	walk = func(path string, s *Section, on bool, hider *Section) {
		if s.Closed && path != "" {
			errs = append(errs, fmt.Errorf("section %q: only a top-level section may be closed", path+s.Key))
		}
		if s.Closed && path == "" {
			hider = s
		}
		path += s.Key
		if !keyRE.MatchString(s.Key) {
			errs = append(errs, fmt.Errorf("section %q: key must match %s", path, keyRE))
		}
		if keys[path] {
			errs = append(errs, fmt.Errorf("section %q: key used twice", path))
		}
		keys[path] = true
		on = on && s.enabled()
		for _, tl := range s.Tools {
			if err := tl.Check(); err != nil {
				errs = append(errs, fmt.Errorf("section %q, tool %q: %w", path, tl.Name(), err))
			}
			if prev, dup := byName[tl.Name()]; dup {
				errs = append(errs, fmt.Errorf("tool %q is declared by both section %q and section %q", tl.Name(), prev, path))
			}
			byName[tl.Name()] = path
			t.owner[tl] = s
			if hider != nil && on {
				t.hider[tl] = hider
			}
		}
		text, err := render(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("section %q: guidance: %w", path, err))
		}
		t.guidance[s] = text
		if on {
			t.enabled = append(t.enabled, s)
			t.on[s] = true
		}
		for _, c := range s.Children {
			walk(path+".", c, on, hider)
		}
	}
	for _, r := range roots {
		walk("", r, true, nil)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

func render(s *Section) (string, error) {
	tmpl, err := template.New(s.Key).Option("missingkey=error").Parse(s.Guidance)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, s.Data); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// Sections returns the enabled sections, depth-first in declaration order.
func (t *Tree) Sections() []*Section { return t.enabled }

// All returns every section, enabled or not, depth-first.
func (t *Tree) All() []*Section {
	var out []*Section
	var walk func(*Section)
	walk = func(s *Section) {
		out = append(out, s)
		for _, c := range s.Children {
			walk(c)
		}
	}
	for _, r := range t.roots {
		walk(r)
	}
	return out
}

// Roots returns the enabled top-level sections.
func (t *Tree) Roots() []*Section {
	var out []*Section
	for _, r := range t.roots {
		if t.on[r] {
			out = append(out, r)
		}
	}
	return out
}

// Tools returns the tools of the enabled sections: depth-first over the
// sections, each section's tools in declaration order.
func (t *Tree) Tools() []*tools.Tool {
	var out []*tools.Tool
	for _, s := range t.enabled {
		out = append(out, s.Tools...)
	}
	return out
}

// Owner returns the section that declares tool.
func (t *Tree) Owner(tool *tools.Tool) *Section { return t.owner[tool] }

// Guidance renders the guidance of the enabled tree: numbered headings, each
// section's text, and its tools' examples.
func (t *Tree) Guidance() string {
	var b strings.Builder
	n := 0
	for _, r := range t.roots {
		if !t.on[r] {
			continue
		}
		n++
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if r.Closed {
			t.summary(&b, r, fmt.Sprint(n))
			continue
		}
		t.write(&b, r, fmt.Sprint(n), 2)
	}
	return b.String()
}

// SectionGuidance renders one section and its enabled children, numbered
// from 1, as offered in the section's prompt and by open_section.
func (t *Tree) SectionGuidance(s *Section) string {
	var b strings.Builder
	t.write(&b, s, "1", 1)
	return b.String()
}

// summary renders the closed top-level section s as the instructions show
// it: its heading, the first paragraph of its guidance, and how to open it.
func (t *Tree) summary(b *strings.Builder, s *Section, num string) {
	fmt.Fprintf(b, "## %s. %s", num, s.Title)
	if first, _, _ := strings.Cut(t.guidance[s], "\n\n"); first != "" {
		b.WriteString("\n\n" + first)
	}
	fmt.Fprintf(b, "\n\nThis section is closed: its tools are not listed. Call `%s` with `{\"section\": %q}` to list them and read the rest of it.", OpenSection, s.Key)
}

func (t *Tree) write(b *strings.Builder, s *Section, num string, level int) {
	fmt.Fprintf(b, "%s %s. %s", strings.Repeat("#", min(level, 6)), num, s.Title)
	if g := t.guidance[s]; g != "" {
		b.WriteString("\n\n" + g)
	}
	writeExamples(b, s.Tools)
	i := 0
	for _, c := range s.Children {
		if !t.on[c] {
			continue
		}
		i++
		b.WriteString("\n\n")
		t.write(b, c, fmt.Sprintf("%s.%d", num, i), level+1)
	}
}

func writeExamples(b *strings.Builder, ts []*tools.Tool) {
	first := true
	for _, tl := range ts {
		for _, ex := range tl.Examples() {
			if first {
				b.WriteString("\n\nExamples:")
				first = false
			}
			fmt.Fprintf(b, "\n\n- `%s`: %s\n  Input: `%s`", tl.Name(), ex.Description, ex.Input)
			if ex.Output == "" {
				continue
			}
			b.WriteString("\n  Output:")
			for _, line := range strings.Split(ex.Output, "\n") {
				b.WriteString("\n")
				if line != "" {
					b.WriteString("    " + line)
				}
			}
		}
	}
}
