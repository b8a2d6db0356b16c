package conformance

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// NoParams are the arguments of the fixtures that take none.
type NoParams struct{}

// A fixture's result has no value: its text is the message alone, and
// extra content blocks follow it.
type noValue = any

// readOnly are the annotations of a fixture that changes nothing.
func readOnly(title string) tools.Annotations {
	return tools.Annotations{Title: title, ReadOnly: true, Idempotent: true}
}

// ok returns a successful result with message and extra content blocks.
func ok(message string, content ...mcp.Content) tools.Result[noValue] {
	r := tools.OK[noValue](message, nil)
	r.Content = content
	return r
}

func simpleText() *tools.Tool {
	return tools.New("test_simple_text", "Return a fixed text.", readOnly("Simple text"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return ok("This is a simple text response for testing."), nil
		})
}

func imageContent() *tools.Tool {
	return tools.New("test_image_content", "Return an image content block: a 1x1 red PNG.", readOnly("Image content"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return ok("An image:", mcp.NewImageContent(redPixelPNG, "image/png")), nil
		})
}

func audioContent() *tools.Tool {
	return tools.New("test_audio_content", "Return an audio content block: a short silent WAV.", readOnly("Audio content"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return ok("An audio clip:", mcp.NewAudioContent(silentWAV, "audio/wav")), nil
		})
}

func embeddedResource() *tools.Tool {
	return tools.New("test_embedded_resource", "Return an embedded text resource.", readOnly("Embedded resource"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return ok("An embedded resource:", mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
			})), nil
		})
}

func multipleContentTypes() *tools.Tool {
	return tools.New("test_multiple_content_types", "Return text, an image and an embedded resource.", readOnly("Multiple content types"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return ok("Multiple content types test:",
				mcp.NewImageContent(redPixelPNG, "image/png"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				})), nil
		})
}

func errorHandling() *tools.Tool {
	return tools.New("test_error_handling", "Always fail, to show how a failed call is reported.", readOnly("Error handling"),
		func(*tools.Context, NoParams) (tools.Result[noValue], error) {
			return tools.Fail[noValue]("This tool intentionally returns an error for testing"), nil
		})
}
