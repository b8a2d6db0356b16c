package workspace

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wink-mcp/wink-mcp/tools"
)

// The output modes of grep.
const (
	modeContent = "content"
	modeFiles   = "files_with_matches"
	modeCount   = "count"
)

// maxContext is the most context lines grep shows on each side of a match.
const maxContext = 20

// GrepParams are the arguments of grep.
type GrepParams struct {
	Pattern         string `json:"pattern" jsonschema:"Regular expression in Go RE2 syntax, matched against each line."`
	Path            string `json:"path,omitempty" jsonschema:"Directory to search, relative to the workspace root; the root when empty."`
	Glob            string `json:"glob,omitempty" jsonschema:"Only search files whose path relative to path matches this glob, such as **/*.go."`
	Type            string `json:"type,omitempty" jsonschema:"Only search files of this type, named as ripgrep names them: go, py, js, ts, rust, java, c, cpp, md and more."`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"content (matching lines, the default), files_with_matches (each matching file once) or count (matching lines per file)."`
	Context         int    `json:"context,omitempty" jsonschema:"Lines shown before and after each match, 0 to 20."`
	Before          int    `json:"before,omitempty" jsonschema:"Lines shown before each match, 0 to 20; overrides context."`
	After           int    `json:"after,omitempty" jsonschema:"Lines shown after each match, 0 to 20; overrides context."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"Match letters in either case."`
	Multiline       bool   `json:"multiline,omitempty" jsonschema:"Match across lines: . matches a newline, and a match shows all its lines."`
	Cursor          string `json:"cursor,omitempty" jsonschema:"The next_cursor of an earlier grep with the same arguments: the search goes on where that one stopped."`
}

// Match is one line grep shows.
type Match struct {
	Path    string `json:"path" jsonschema:"The file."`
	Line    int    `json:"line" jsonschema:"The line number, from 1."`
	Text    string `json:"text" jsonschema:"The line, or a window of it around the match when it is very long."`
	Context bool   `json:"context,omitempty" jsonschema:"Whether it is a line of context, not a match."`
}

// FileCount is how many lines of a file match.
type FileCount struct {
	Path  string `json:"path" jsonschema:"The file."`
	Count int    `json:"count" jsonschema:"Its matching lines (multiline: its matches)."`
}

// GrepMatches is the result of grep.
type GrepMatches struct {
	Pattern    string      `json:"pattern" jsonschema:"The pattern."`
	OutputMode string      `json:"output_mode" jsonschema:"The output mode."`
	Matches    []Match     `json:"matches,omitempty" jsonschema:"content: matching lines and their context, sorted by path and line."`
	Files      []string    `json:"files,omitempty" jsonschema:"files_with_matches: the matching files, sorted."`
	Counts     []FileCount `json:"counts,omitempty" jsonschema:"count: the matching files with their counts, sorted."`
	// The totals count the whole search, before the cursor and after the
	// page too.
	TotalMatches int  `json:"total_matches,omitempty" jsonschema:"How many matches in all (not counted by files_with_matches)."`
	TotalFiles   int  `json:"total_files" jsonschema:"How many files match in all."`
	Stopped      bool `json:"stopped,omitempty" jsonschema:"Whether the deadline stopped the search: the totals count what it searched."`
	// Truncated and NextCursor page the results.
	Truncated  bool   `json:"truncated" jsonschema:"Whether more results follow: the page (1000 entries or 64 KiB) is full, or the deadline stopped the search."`
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"Pass it as cursor, with the same arguments, for the next results; present when truncated."`

	separate bool // content with context: -- between groups
}

// Render writes the results as ripgrep does: "path:12: text" for a
// matching line, "path-11- text" for a context line, "--" between groups;
// the paths; or "path:count"; then how to go on when truncated.
func (g *GrepMatches) Render() string {
	var b strings.Builder
	switch g.OutputMode {
	case modeFiles:
		b.WriteString(strings.Join(g.Files, "\n"))
	case modeCount:
		for i, c := range g.Counts {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s:%d", c.Path, c.Count)
		}
	default:
		for i, m := range g.Matches {
			if i > 0 {
				b.WriteByte('\n')
				if prev := g.Matches[i-1]; g.separate && (prev.Path != m.Path || prev.Line+1 != m.Line) {
					b.WriteString("--\n")
				}
			}
			sep := ':'
			if m.Context {
				sep = '-'
			}
			fmt.Fprintf(&b, "%s%c%d%c %s", m.Path, sep, m.Line, sep, m.Text)
		}
	}
	if b.Len() == 0 {
		b.WriteString("(no matches)")
	}
	switch {
	case g.Stopped && g.Truncated:
		fmt.Fprintf(&b, "\n[the deadline stopped the search: narrow the path, glob or type, or call grep again with cursor %q to go on]", g.NextCursor)
	case g.Stopped:
		b.WriteString("\n[the deadline stopped counting the rest: the totals count what was searched]")
	case g.Truncated:
		fmt.Fprintf(&b, "\n[more follow: call grep again with cursor %q, or narrow the pattern, path, glob or type]", g.NextCursor)
	}
	return b.String()
}

// grepQuery is a grep checked and compiled.
type grepQuery struct {
	m      *matcher
	mode   string
	dir    string
	filter string   // glob, relative to dir
	types  []string // globs of the type, matched against the base name
	search cursor
	from   *cursor
}

// keeps reports whether the search looks into the file at p.
func (q *grepQuery) keeps(p string) bool {
	if q.filter != "" {
		if ok, _ := doublestar.Match(q.filter, relTo(p, q.dir)); !ok {
			return false
		}
	}
	return q.types == nil || matchesType(q.types, base(p))
}

// grepQueryOf checks the arguments of grep; a failure is the message the
// model reads.
func (s *settings) grepQueryOf(w *Workspace, p GrepParams) (*grepQuery, *failure) {
	q := &grepQuery{mode: p.OutputMode}
	if q.mode == "" {
		q.mode = modeContent
	}
	if q.mode != modeContent && q.mode != modeFiles && q.mode != modeCount {
		return nil, failf("Invalid output_mode %q: use content, files_with_matches or count.", p.OutputMode)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"context", p.Context}, {"before", p.Before}, {"after", p.After}} {
		if n.v < 0 || n.v > maxContext {
			return nil, failf("%s must be between 0 and %d.", n.name, maxContext)
		}
	}
	m, err := newMatcher(p.Pattern, p.CaseInsensitive, p.Multiline)
	if err != nil {
		return nil, failf("Invalid regular expression: %s", err.Error())
	}
	m.before, m.after = cmp.Or(p.Before, p.Context), cmp.Or(p.After, p.Context)
	q.m = m
	dir, f := s.searchDir(w, p.Path)
	if f != nil {
		return nil, f
	}
	q.dir = dir
	q.filter = strings.TrimPrefix(strings.TrimSpace(p.Glob), "/")
	if p.Glob != "" && (q.filter == "" || !doublestar.ValidatePattern(q.filter)) {
		return nil, failf("Invalid glob pattern: %q.", p.Glob)
	}
	if p.Type != "" {
		globs, ok := fileTypes[p.Type]
		if !ok {
			return nil, failf("Unknown type %q; the known types are %s.", p.Type, strings.Join(slices.Sorted(maps.Keys(fileTypes)), ", "))
		}
		q.types = globs
	}
	q.search = cursor{Tool: "grep", Pattern: p.Pattern, Path: p.Path, Glob: p.Glob, Type: p.Type, Mode: q.mode, Fold: p.CaseInsensitive, Multi: p.Multiline}
	if q.from, err = decodeCursor(p.Cursor, q.search); err != nil {
		return nil, &failure{msg: err.Error()}
	}
	return q, nil
}

// grepRun is the state of one grep as its results come in, in path order.
type grepRun struct {
	q    *grepQuery
	out  *GrepMatches
	max  int // entries of a page
	size int // bytes of the page so far
	n    int // entries of the page so far
	full atomic.Bool
	prog progress
}

// scan is what a worker does with each file's content.
func (r *grepRun) scan(st *scanState, path string, data []byte) fileScan {
	q := r.q
	switch {
	case q.mode == modeFiles:
		return q.m.scanFile(st, path, data, scanAny, 0, 0, 0)
	case q.mode == modeCount || r.full.Load() || q.from != nil && pathLess(path, q.from.File):
		return q.m.scanFile(st, path, data, scanCount, 0, 0, 0)
	}
	from := 0
	if q.from != nil && path == q.from.File {
		from = q.from.Line
	}
	return q.m.scanFile(st, path, data, scanShow, from, r.max, PageBytes)
}

// cut ends the page before line of the file at p (0: the whole file).
func (r *grepRun) cut(p string, line int) {
	r.full.Store(true)
	r.out.Truncated = true
	c := r.q.search
	c.File, c.Line = p, line
	r.out.NextCursor = c.encode()
}

// take adds the result of one file, in path order.
func (r *grepRun) take(j *searchJob) error {
	res, out := &j.res, r.out
	r.prog.step(func() string {
		return fmt.Sprintf("Searched %s; %s so far.", plural(r.prog.steps, "file", "files"), plural(out.TotalFiles, "matching file", "matching files"))
	})
	if res.skipped || res.matches == 0 {
		return nil
	}
	out.TotalFiles++
	if r.q.mode != modeFiles {
		out.TotalMatches += res.matches // files_with_matches stops at a file's first
	}
	if r.full.Load() || r.q.from != nil && pathLess(j.path, r.q.from.File) {
		return nil
	}
	switch r.q.mode {
	case modeFiles, modeCount:
		if r.n == r.max || r.size+len(j.path)+8 > PageBytes && r.n > 0 {
			r.cut(j.path, 0)
			return nil
		}
		r.n++
		r.size += len(j.path) + 8
		if r.q.mode == modeFiles {
			out.Files = append(out.Files, j.path)
		} else {
			out.Counts = append(out.Counts, FileCount{Path: j.path, Count: res.matches})
		}
		return nil
	}
	for _, g := range res.groups {
		if r.n == r.max || r.size+g.bytes > PageBytes && r.n > 0 {
			r.cut(j.path, g.first)
			return nil
		}
		r.n++
		r.size += g.bytes
		out.Matches = append(out.Matches, g.lines...)
	}
	if res.more > 0 {
		r.cut(j.path, res.more)
	}
	return nil
}

// stopped records that the deadline or a cancellation stopped the search
// before the file at p.
func (r *grepRun) stopped(p string) {
	r.out.Stopped = true
	if r.full.Load() {
		return
	}
	line := 0
	if from := r.q.from; from != nil {
		switch {
		case pathLess(p, from.File):
			p, line = from.File, from.Line
		case p == from.File:
			line = from.Line
		}
	}
	r.cut(p, line)
}

func (s *settings) grep() *tools.Tool {
	return tools.New("grep",
		"Search workspace text files for a Go regular expression: matching lines (path:line: text), files or counts, with context lines and totals. When truncated, pass next_cursor as cursor.",
		tools.Annotations{Title: "Search file contents", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p GrepParams) (tools.Result[*GrepMatches], error) {
			w := From(ctx.Session)
			q, f := s.grepQueryOf(w, p)
			if f != nil {
				return tools.Fail[*GrepMatches](f.msg), nil
			}
			out := &GrepMatches{Pattern: p.Pattern, OutputMode: q.mode, separate: q.m.before+q.m.after > 0}
			if q.mode == modeContent {
				out.Matches = []Match{}
			}
			r := &grepRun{q: q, out: out, max: s.maxMatches, prog: progress{ctx: ctx}}
			sctx, cancel := searchContext(ctx)
			defer cancel()
			err := w.searchFiles(sctx, q.dir, s.maxFile, q.keeps, r.scan, r.take)
			var cut *searchCut
			switch {
			case errors.As(err, &cut) && ctx.Err() == nil:
				r.stopped(cut.path)
			case err != nil:
				return tools.Result[*GrepMatches]{}, err
			}
			return tools.OK(grepMessage(out, q.mode), out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Find TODO comments in Go files.",
			Input:       `{"pattern":"TODO","type":"go"}`,
			Output:      "Found 1 match in 1 file.\n\nmain.go:12: \t// TODO: handle errors",
		}),
	)
}

// grepMessage says what grep found: the totals, what the page shows, and
// whether the deadline stopped it.
func grepMessage(out *GrepMatches, mode string) string {
	found := plural(out.TotalFiles, "matching file", "matching files")
	if mode != modeFiles {
		found = fmt.Sprintf("%s in %s", plural(out.TotalMatches, "match", "matches"), plural(out.TotalFiles, "file", "files"))
	}
	msg := "Found " + found + "."
	if out.Stopped {
		msg = "The deadline stopped the search; found " + found + " in what it searched."
	}
	shown := len(out.Files) + len(out.Counts)
	if mode == modeContent {
		shown = 0
		for _, m := range out.Matches {
			if !m.Context {
				shown++
			}
		}
	}
	if out.Truncated {
		msg += fmt.Sprintf(" Showing %d; more follow.", shown)
	}
	return msg
}

// cursor is where a truncated grep or glob stopped: the file (and for
// grep the line) of the first match it did not return, and the tool and
// arguments of the search it belongs to.
type cursor struct {
	Tool    string `json:"t"`
	Pattern string `json:"q"`
	Path    string `json:"p"`
	Glob    string `json:"g,omitempty"`
	Type    string `json:"y,omitempty"`
	Mode    string `json:"m,omitempty"`
	Fold    bool   `json:"i,omitempty"`
	Multi   bool   `json:"n,omitempty"`
	File    string `json:"f"`
	Line    int    `json:"l,omitempty"`
}

// encode returns c as the opaque next_cursor of a result.
func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// cursorArgs names, by tool, the arguments a cursor belongs to.
var cursorArgs = map[string]string{"grep": "pattern, path, glob, type, case_insensitive and multiline", "glob": "pattern and path", "ls": "path and all"}

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
	if err != nil || c.File == "" || c.Line < 0 {
		return nil, fmt.Errorf("Invalid cursor: pass the next_cursor of an earlier call of %s unchanged.", search.Tool)
	}
	switch {
	case c.Tool != search.Tool:
		return nil, fmt.Errorf("Invalid cursor: it is the next_cursor of %s, not of %s.", c.Tool, search.Tool)
	case c.Mode != search.Mode:
		return nil, fmt.Errorf("Invalid cursor: it is the next_cursor of %s with output_mode %s, not %s; pass the same output_mode with it.", c.Tool, c.Mode, search.Mode)
	case c.Pattern != search.Pattern || c.Path != search.Path || c.Glob != search.Glob || c.Type != search.Type || c.Fold != search.Fold || c.Multi != search.Multi:
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
