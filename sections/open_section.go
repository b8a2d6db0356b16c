package sections

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// OpenSection is the name of the tool that opens a closed section.
const OpenSection = "open_section"

// OpenSectionParams are the arguments of open_section.
type OpenSectionParams struct {
	Section string `json:"section"`
}

// OpenSectionResult is what open_section returns: the section opened, its
// tools, now listed, and its whole guidance, which the text shows.
type OpenSectionResult struct {
	Section  string   `json:"section" jsonschema:"The key of the section opened."`
	Tools    []string `json:"tools" jsonschema:"The section's tools, now listed."`
	Guidance string   `json:"guidance" jsonschema:"The section's whole guidance."`
}

// Render returns the section's guidance.
func (r OpenSectionResult) Render() string { return r.Guidance }

// openSection returns the open_section tool of t, which opens one of the
// sections whose keys are closed; its input schema lists them.
func (t *Tree) openSection(closed []string) *tools.Tool {
	enum, _ := json.Marshal(closed)
	schema := `{"type":"object","properties":{"section":{"type":"string","enum":` + string(enum) +
		`,"description":"The key of the closed section to open."}},"required":["section"],"additionalProperties":false}`
	return tools.New(OpenSection,
		"Open a closed section for this session: its tools are listed from now on, and the result holds its whole guidance.",
		tools.Annotations{Title: "Open section", Idempotent: true},
		func(ctx *tools.Context, p OpenSectionParams) (tools.Result[OpenSectionResult], error) {
			sec := t.closed[p.Section]
			var names []string
			for _, s := range t.enabled {
				for _, tl := range s.Tools {
					if t.hider[tl] == sec {
						names = append(names, tl.Name())
					}
				}
			}
			res := OpenSectionResult{Section: sec.Key, Tools: names, Guidance: t.SectionGuidance(sec)}
			if IsOpen(ctx.Session, sec.Key) {
				return tools.OK(fmt.Sprintf("Section '%s' is already open; its tools: %s.", sec.Key, strings.Join(names, ", ")), res), nil
			}
			if err := ctx.Dispatch(SectionOpened{Key: sec.Key}); err != nil {
				return tools.Result[OpenSectionResult]{}, err
			}
			return tools.OK(fmt.Sprintf("Opened section '%s'; its tools are now listed: %s.", sec.Key, strings.Join(names, ", ")), res), nil
		},
		tools.WithInputSchema(schema),
		tools.WithExamples(tools.Example{
			Description: "Open the section " + closed[0] + ".",
			Input:       fmt.Sprintf(`{"section":%q}`, closed[0]),
		}),
	)
}
