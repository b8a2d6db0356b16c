// Package conformance is the section that provides the fixtures of the
// official MCP conformance suite (@modelcontextprotocol/conformance): the
// tools, resources, prompts and completions its server scenarios call by
// name, such as test_simple_text, test://static-text and
// test_simple_prompt.
//
// The fixtures are served through the server's own pipeline like any other
// section: arguments are validated, calls run in transactions, results are
// rendered into content blocks, and progress, log messages, sampling and
// elicitation reach the client through tools.Context. So when the suite
// passes, it has exercised the real path, not a test double.
//
// The section is off by default; main turns it on with --conformance. Its
// tools keep no state.
package conformance

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Key is the section's key.
const Key = "conformance"

//go:embed guidance.md
var guidance string

// New returns the conformance section.
func New() *sections.Section {
	return &sections.Section{
		Key:      Key,
		Title:    "Conformance fixtures",
		Guidance: guidance,
		Tools: []*tools.Tool{
			simpleText(), imageContent(), audioContent(), embeddedResource(), multipleContentTypes(),
			errorHandling(), toolWithLogging(), toolWithProgress(), reconnection(),
			sampling(), elicitation(), elicitationDefaults(), elicitationEnums(),
			jsonSchema2020(),
		},
		Resources:   resources(),
		Templates:   templates(),
		Prompts:     prompts(),
		Completions: completions(),
		Stateless:   true,
	}
}

// redPixelPNG is a 1x1 red PNG.
const redPixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// silentWAV is a short silent mono 8 kHz 16-bit WAV file, base64-encoded.
var silentWAV = func() string {
	const samples = 80 // 10 ms
	var b strings.Builder
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples*2))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))    // PCM
	le(uint16(1))    // mono
	le(uint32(8000)) // sample rate
	le(uint32(16000))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(samples * 2))
	b.WriteString(strings.Repeat("\x00\x00", samples))
	return base64.StdEncoding.EncodeToString([]byte(b.String()))
}()

// URIs of the fixture resources.
const (
	StaticTextURI  = "test://static-text"
	StaticBlobURI  = "test://static-binary"
	WatchedURI     = "test://watched-resource"
	TemplateURI    = "test://template/{id}/data"
	staticTextBody = "This is the content of the static text resource."
)

func resources() []sections.Resource {
	return []sections.Resource{
		{
			URI: StaticTextURI, Name: "Static text", MIMEType: "text/plain",
			Description: "A fixed text resource.",
			Read: func(context.Context, *session.Session) (string, error) {
				return staticTextBody, nil
			},
		},
		{
			URI: StaticBlobURI, Name: "Static binary", MIMEType: "image/png", Blob: true,
			Description: "A fixed binary resource: a 1x1 PNG.",
			Read: func(context.Context, *session.Session) (string, error) {
				b, err := base64.StdEncoding.DecodeString(redPixelPNG)
				return string(b), err
			},
		},
		{
			URI: WatchedURI, Name: "Watched resource", MIMEType: "text/plain",
			Description: "A resource clients may subscribe to.",
			Read: func(context.Context, *session.Session) (string, error) {
				return "Watched resource content.", nil
			},
		},
	}
}

func templates() []sections.ResourceTemplate {
	return []sections.ResourceTemplate{{
		URITemplate: TemplateURI, Name: "Template data", MIMEType: "application/json",
		Description: "Data for the ID in the URI.",
		Read: func(_ context.Context, _ *session.Session, _ string, args map[string]string) (string, error) {
			id := args["id"]
			return fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id), nil
		},
	}}
}

func prompts() []sections.Prompt {
	text := func(s string) mcp.Content { return mcp.NewTextContent(s) }
	return []sections.Prompt{
		{
			Name: "test_simple_prompt", Description: "A simple prompt without arguments.",
			Get: func(context.Context, *session.Session, map[string]string) ([]sections.PromptMessage, error) {
				return []sections.PromptMessage{{Role: "user", Content: text("This is a simple prompt for testing.")}}, nil
			},
		},
		{
			Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments.",
			Arguments: []sections.PromptArgument{
				{Name: "arg1", Description: "First test argument", Required: true},
				{Name: "arg2", Description: "Second test argument", Required: true},
			},
			Get: func(_ context.Context, _ *session.Session, args map[string]string) ([]sections.PromptMessage, error) {
				return []sections.PromptMessage{{Role: "user", Content: text(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"]))}}, nil
			},
		},
		{
			Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.",
			Arguments: []sections.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
			Get: func(_ context.Context, _ *session.Session, args map[string]string) ([]sections.PromptMessage, error) {
				return []sections.PromptMessage{
					{Role: "user", Content: mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: args["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."})},
					{Role: "user", Content: text("Please process the embedded resource above.")},
				}, nil
			},
		},
		{
			Name: "test_prompt_with_image", Description: "A prompt with an image.",
			Get: func(context.Context, *session.Session, map[string]string) ([]sections.PromptMessage, error) {
				return []sections.PromptMessage{
					{Role: "user", Content: mcp.NewImageContent(redPixelPNG, "image/png")},
					{Role: "user", Content: text("Please analyze the image above.")},
				}, nil
			},
		},
	}
}

// cities are the completions offered for test_prompt_with_arguments' arg1.
var cities = []string{"paris", "park", "party", "test", "testing", "tests"}

func completions() []sections.Completion {
	return []sections.Completion{{
		Prompt: "test_prompt_with_arguments", Argument: "arg1",
		Complete: func(_ context.Context, value string, _ map[string]string) ([]string, error) {
			var out []string
			for _, c := range cities {
				if strings.HasPrefix(c, value) {
					out = append(out, c)
				}
			}
			return out, nil
		},
	}}
}
