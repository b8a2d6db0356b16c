package workspace

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wink-mcp/wink-mcp/tools"
)

// GrepParams are the arguments of grep.
type GrepParams struct {
	Pattern string `json:"pattern" jsonschema:"Regular expression in Go RE2 syntax, matched against each line."`
	Path    string `json:"path,omitempty" jsonschema:"Directory to search, relative to the workspace root; the root when empty."`
	Glob    string `json:"glob,omitempty" jsonschema:"Only search files whose path relative to path matches this glob, such as **/*.go."`
}

// Match is one matching line.
type Match struct {
	Path string `json:"path" jsonschema:"The file."`
	Line int    `json:"line" jsonschema:"The line number, from 1."`
	Text string `json:"text" jsonschema:"The line."`
}

// GrepMatches is the result of grep.
type GrepMatches struct {
	Pattern string  `json:"pattern" jsonschema:"The pattern."`
	Matches []Match `json:"matches" jsonschema:"Matching lines, sorted by path and line."`
	Capped  bool    `json:"capped" jsonschema:"Whether the search stopped at the cap; there may be more."`
}

// Render writes "path:line: text" per match, and a marker when capped.
func (g *GrepMatches) Render() string {
	if len(g.Matches) == 0 {
		return "(no matches)"
	}
	var b strings.Builder
	for i, m := range g.Matches {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d: %s", m.Path, m.Line, truncateLine(m.Text, MaxLineBytes))
	}
	if g.Capped {
		fmt.Fprintf(&b, "\n[output capped at %d matches; there are more: narrow the pattern, path or glob]", len(g.Matches))
	}
	return b.String()
}

func (s *settings) grep() *tools.Tool {
	return tools.New("grep",
		"Search workspace text files for lines matching a Go regular expression; prints path:line: text, sorted.",
		tools.Annotations{Title: "Search file contents", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p GrepParams) (tools.Result[*GrepMatches], error) {
			re, err := regexp.Compile(p.Pattern)
			if err != nil {
				return tools.Fail[*GrepMatches]("Invalid regular expression: " + err.Error()), nil
			}
			w := From(ctx.Session)
			dir, f := s.searchDir(w, p.Path)
			if f != nil {
				return tools.Fail[*GrepMatches](f.msg), nil
			}
			filter := strings.TrimPrefix(strings.TrimSpace(p.Glob), "/")
			if p.Glob != "" && (filter == "" || !doublestar.ValidatePattern(filter)) {
				return tools.Fail[*GrepMatches](fmt.Sprintf("Invalid glob pattern: %q.", p.Glob)), nil
			}
			out := &GrepMatches{Pattern: p.Pattern, Matches: []Match{}}
			files := 0
			prog := progress{ctx: ctx}
			err = w.walk(dir, func(in Info) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				prog.step(func() string {
					return fmt.Sprintf("Searched %s; %s so far.", plural(prog.steps, "file", "files"), plural(len(out.Matches), "match", "matches"))
				})
				if filter != "" {
					if ok, _ := doublestar.Match(filter, relTo(in.Path, dir)); !ok {
						return nil
					}
				}
				data, err := w.st.readFile(in.Path, s.maxFile)
				if err != nil || isBinary(data) {
					return nil // unreadable, too large or binary: skipped
				}
				found := false
				for i, line := range splitLines(string(data)) {
					if !re.MatchString(line) {
						continue
					}
					if len(out.Matches) == s.maxMatches {
						out.Capped = true
						return errStop
					}
					found = true
					out.Matches = append(out.Matches, Match{Path: in.Path, Line: i + 1, Text: line})
				}
				if found {
					files++
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStop) {
				return tools.Result[*GrepMatches]{}, err
			}
			msg := fmt.Sprintf("Found %s in %s.", plural(len(out.Matches), "match", "matches"), plural(files, "file", "files"))
			if out.Capped {
				msg = fmt.Sprintf("Found more than %d matches; showing the first %d.", s.maxMatches, s.maxMatches)
			}
			return tools.OK(msg, out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Find TODO comments in Go files.",
			Input:       `{"pattern":"TODO","glob":"**/*.go"}`,
			Output:      "Found 1 match in 1 file.\n\nmain.go:12: \t// TODO: handle errors",
		}),
	)
}
