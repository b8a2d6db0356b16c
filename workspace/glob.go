package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wink-mcp/wink-mcp/tools"
)

// DefaultMaxMatches caps the entries ls, the paths glob and the matches
// grep return in one page.
const DefaultMaxMatches = 1000

// GlobParams are the arguments of glob.
type GlobParams struct {
	Pattern string `json:"pattern" jsonschema:"Glob relative to path: * and ? stay within one directory, ** spans any number of directories, {a,b} and [abc] as usual."`
	Path    string `json:"path,omitempty" jsonschema:"Directory to search from, relative to the workspace root; the root when empty."`
	Cursor  string `json:"cursor,omitempty" jsonschema:"The next_cursor of an earlier glob with the same pattern and path: the list goes on where that one stopped."`
}

// GlobMatches is the result of glob.
type GlobMatches struct {
	Pattern string   `json:"pattern" jsonschema:"The pattern."`
	Path    string   `json:"path" jsonschema:"The directory searched; empty for the root."`
	Files   []string `json:"files" jsonschema:"Matching file paths from the workspace root, sorted: from the cursor on, when given."`
	Total   int      `json:"total" jsonschema:"How many files match, before the cursor and after this page too."`
	Stopped bool     `json:"stopped,omitempty" jsonschema:"Whether the deadline stopped the search: the total counts what it looked at."`
	// Truncated and NextCursor page the files.
	Truncated  bool   `json:"truncated" jsonschema:"Whether more files may follow: the list stopped at its cap of paths or its 64 KiB page, or the deadline stopped the search."`
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"Pass it as cursor, with the same pattern and path, for the next files; present when truncated."`
}

// Render lists the paths, one per line, with a marker when truncated.
func (g *GlobMatches) Render() string {
	if len(g.Files) == 0 && !g.Stopped {
		return "(no files match)"
	}
	s := strings.Join(g.Files, "\n")
	switch {
	case g.Stopped && g.Truncated:
		s += fmt.Sprintf("\n[the deadline stopped the search: narrow the pattern or path, or call glob again with cursor %q to go on]", g.NextCursor)
	case g.Stopped:
		s += "\n[the deadline stopped counting the rest: the total counts what was looked at]"
	case g.Truncated:
		s += fmt.Sprintf("\n[more files follow: call glob again with cursor %q, or narrow the pattern or path]", g.NextCursor)
	}
	return s
}

// errStop ends a walk early.
var errStop = errors.New("stop")

func (s *settings) glob() *tools.Tool {
	return tools.New("glob",
		"Find workspace files whose path (relative to path) matches a glob pattern; ** spans directories. Sorted paths. When truncated, call again with cursor set to next_cursor for the next files.",
		tools.Annotations{Title: "Find files", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p GlobParams) (tools.Result[*GlobMatches], error) {
			dir, f := s.searchDir(From(ctx.Session), p.Path)
			if f != nil {
				return tools.Fail[*GlobMatches](f.msg), nil
			}
			pattern := strings.TrimPrefix(strings.TrimSpace(p.Pattern), "/")
			if pattern == "" || !doublestar.ValidatePattern(pattern) {
				return tools.Fail[*GlobMatches](fmt.Sprintf("Invalid glob pattern: %q.", p.Pattern)), nil
			}
			search := cursor{Tool: "glob", Pattern: p.Pattern, Path: p.Path}
			from, err := decodeCursor(p.Cursor, search)
			if err != nil {
				return tools.Fail[*GlobMatches](err.Error()), nil
			}
			out := &GlobMatches{Pattern: pattern, Path: dir, Files: []string{}}
			size := 0
			g := compileGlob(pattern)
			w := From(ctx.Session)
			top, found := w.globTop(dir, g.prefix)
			prog := progress{ctx: ctx}
			sctx, cancel := searchContext(ctx)
			defer cancel()
			walk := w.names
			if !found {
				walk = func(string, func(Info) error) error { return nil } // nothing can match
			}
			err = walk(top, func(in Info) error {
				if sctx.Err() != nil && ctx.Err() == nil {
					// The deadline is near: answer with what was found.
					out.Stopped = true
					if !out.Truncated {
						out.Truncated = true
						search.File = in.Path
						if from != nil && pathLess(in.Path, from.File) {
							search.File = from.File
						}
						out.NextCursor = search.encode()
					}
					return errStop
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				prog.step(func() string {
					return fmt.Sprintf("Looked at %s; %s so far.", plural(prog.steps, "file", "files"), plural(out.Total, "match", "matches"))
				})
				if !g.match(relTo(in.Path, dir)) {
					return nil
				}
				out.Total++
				switch {
				case from != nil && pathLess(in.Path, from.File), out.Truncated:
				case len(out.Files) == s.maxMatches || size+len(in.Path)+1 > PageBytes && len(out.Files) > 0:
					out.Truncated = true
					search.File = in.Path
					out.NextCursor = search.encode()
				default:
					size += len(in.Path) + 1
					out.Files = append(out.Files, in.Path)
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStop) {
				return tools.Result[*GlobMatches]{}, err
			}
			msg := fmt.Sprintf("Found %s matching %s under %s.", plural(out.Total, "file", "files"), pattern, display(dir))
			if out.Stopped {
				msg = fmt.Sprintf("The deadline stopped the search; found %s matching %s under %s in what it looked at.", plural(out.Total, "file", "files"), pattern, display(dir))
			}
			switch {
			case out.Truncated:
				msg += fmt.Sprintf(" Showing %d; more follow.", len(out.Files))
			case from != nil:
				msg += fmt.Sprintf(" Showing the last %d.", len(out.Files))
			}
			return tools.OK(msg, out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Find every Go file.",
			Input:       `{"pattern":"**/*.go"}`,
			Output:      "Found 2 files matching **/*.go under /.\n\ncmd/tool/main.go\nmain.go",
		}),
	)
}

// globMatcher is a glob compiled for a walk: the directories its leading
// literal segments name, where the walk starts, and the cheapest test of
// a path that is equivalent to doublestar's.
type globMatcher struct {
	pattern string
	// prefix is the pattern's leading segments without wildcards, but
	// the last: only files under it can match ("" when none).
	prefix string
	// name, when set, is the last segment of a pattern of the form
	// PREFIX/**/NAME: a file under the prefix matches when its name does.
	name string
	// suffix, when name is a star followed by a literal, is the literal.
	suffix string
}

// globMeta are the bytes that make a glob segment not literal.
const globMeta = "*?[{\\"

// compileGlob compiles a valid pattern.
func compileGlob(pattern string) globMatcher {
	g := globMatcher{pattern: pattern}
	rest := pattern
	for {
		i := strings.IndexByte(rest, '/')
		if i < 0 || strings.ContainsAny(rest[:i], globMeta) {
			break
		}
		g.prefix = join(g.prefix, rest[:i])
		rest = rest[i+1:]
	}
	if name, ok := strings.CutPrefix(rest, "**/"); ok && !strings.Contains(name, "/") && !strings.Contains(name, "**") {
		g.name = name
		if lit, ok := strings.CutPrefix(name, "*"); ok && !strings.ContainsAny(lit, globMeta) {
			g.suffix = lit
		}
	}
	return g
}

// match reports whether the path rel, under the prefix, matches.
func (g *globMatcher) match(rel string) bool {
	switch {
	case g.suffix != "":
		return strings.HasSuffix(rel, g.suffix) // the literal has no slash
	case g.name != "":
		ok, _ := doublestar.Match(g.name, base(rel))
		return ok
	}
	ok, _ := doublestar.Match(g.pattern, rel)
	return ok
}

// globTop returns where glob walks, the directory prefix under dir, and
// whether a walk there can find anything: each directory on the way must
// be one (not a link), and one the walk from dir would enter.
func (w *Workspace) globTop(dir, prefix string) (string, bool) {
	if prefix == "" {
		return dir, true
	}
	var rules ignoreRules
	if !w.includeIgnored {
		rules = rulesAt(w.st, dir)
	}
	p := dir
	for _, seg := range strings.Split(prefix, "/") {
		p = join(p, seg)
		in, err := w.st.lstat(p)
		if err != nil || !in.Dir || in.Link || !addressable(seg) {
			return "", false
		}
		if !w.includeIgnored {
			if rules.skips(p, true) {
				return "", false
			}
			rules = rules.enter(w.st, p)
		}
	}
	return p, true
}

// searchDir normalises the base directory of glob and grep and checks that
// it is a directory.
func (s *settings) searchDir(w *Workspace, path string) (string, *failure) {
	dir, err := Normalize(path)
	if err != nil {
		return "", &failure{msg: err.Error()}
	}
	info, err := w.st.stat(dir)
	switch {
	case err != nil:
		if f := describe(err, dir, "Directory does not exist: "+display(dir), s.maxFile); f != nil {
			return "", f
		}
		return "", &failure{msg: err.Error()}
	case !info.Dir:
		return "", failf("%s is a file, not a directory; give a directory as path.", dir)
	}
	return dir, nil
}

// relTo returns p relative to the directory dir, which holds it.
func relTo(p, dir string) string {
	if dir == "" {
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}
