package workspace

import (
	"encoding/base64"
	"encoding/json"
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
	Cursor  string `json:"cursor,omitempty" jsonschema:"The next_cursor of an earlier grep with the same pattern, path and glob: the search goes on where that one stopped."`
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
	// Truncated and NextCursor page the matches.
	Truncated  bool   `json:"truncated" jsonschema:"Whether the search stopped at its match cap or its 64 KiB page; more matches follow."`
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"Pass it as cursor, with the same pattern, path and glob, for the next matches; present when truncated."`
}

// Render writes "path:line: text" per match, and a marker when truncated.
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
	if g.Truncated {
		fmt.Fprintf(&b, "\n[more matches follow: call grep again with cursor %q, or narrow the pattern, path or glob]", g.NextCursor)
	}
	return b.String()
}

func (s *settings) grep() *tools.Tool {
	return tools.New("grep",
		"Search workspace text files for lines matching a Go regular expression; prints path:line: text, sorted. When truncated, call again with cursor set to next_cursor for the next matches.",
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
			search := cursor{Tool: "grep", Pattern: p.Pattern, Path: p.Path, Glob: p.Glob}
			from, err := decodeCursor(p.Cursor, search)
			if err != nil {
				return tools.Fail[*GrepMatches](err.Error()), nil
			}
			out := &GrepMatches{Pattern: p.Pattern, Matches: []Match{}}
			files, size := 0, 0
			prog := progress{ctx: ctx}
			err = w.walk(dir, func(in Info) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				prog.step(func() string {
					return fmt.Sprintf("Searched %s; %s so far.", plural(prog.steps, "file", "files"), plural(len(out.Matches), "match", "matches"))
				})
				if from != nil && pathLess(in.Path, from.File) {
					return nil
				}
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
					if from != nil && in.Path == from.File && i+1 < from.Line || !re.MatchString(line) {
						continue
					}
					size += len(in.Path) + len(line) + 16
					if len(out.Matches) == s.maxMatches || size > PageBytes && len(out.Matches) > 0 {
						out.Truncated = true
						search.File, search.Line = in.Path, i+1
						out.NextCursor = search.encode()
						if found {
							files++
						}
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
			if out.Truncated {
				msg = fmt.Sprintf("Found %s in %s; more follow.", plural(len(out.Matches), "match", "matches"), plural(files, "file", "files"))
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

// cursor is where a truncated grep or glob stopped: the file (and for
// grep the line) of the first match it did not return, and the tool and
// arguments of the search it belongs to.
type cursor struct {
	Tool    string `json:"t"`
	Pattern string `json:"q"`
	Path    string `json:"p"`
	Glob    string `json:"g,omitempty"`
	File    string `json:"f"`
	Line    int    `json:"l,omitempty"`
}

// encode returns c as the opaque next_cursor of a result.
func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// cursorArgs names, by tool, the arguments a cursor belongs to.
var cursorArgs = map[string]string{"grep": "pattern, path and glob", "glob": "pattern and path", "ls": "path and all"}

// decodeCursor returns where the search of the tool and arguments of
// search goes on from: nil without a cursor (raw empty), an error naming
// the fault for one that is malformed or belongs to another search.
func decodeCursor(raw string, search cursor) (*cursor, error) {
	if raw == "" {
		return nil, nil
	}
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.File == "" || c.Line < 0 || c.Tool == "grep" && c.Line < 1 {
		return nil, fmt.Errorf("Invalid cursor: pass the next_cursor of an earlier call of %s unchanged.", search.Tool)
	}
	switch {
	case c.Tool != search.Tool:
		return nil, fmt.Errorf("Invalid cursor: it is the next_cursor of %s, not of %s.", c.Tool, search.Tool)
	case c.Pattern != search.Pattern || c.Path != search.Path || c.Glob != search.Glob:
		return nil, fmt.Errorf("Invalid cursor: it belongs to a call of %s with other arguments; pass the same %s with it.", search.Tool, cursorArgs[search.Tool])
	}
	return &c, nil
}

// pathLess reports whether a comes before b in the walk's order: segment
// by segment, by name.
func pathLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := range min(len(as), len(bs)) {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}
