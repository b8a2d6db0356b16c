package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// LsParams are the arguments of ls.
type LsParams struct {
	Path   string `json:"path,omitempty" jsonschema:"Directory to list, relative to the workspace root; the root when empty."`
	All    bool   `json:"all,omitempty" jsonschema:"Also list hidden entries: names starting with a dot, and what .gitignore files ignore."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The next_cursor of an earlier ls of the same path and all: the listing goes on where that one stopped."`
}

// Entry is one child of a listed directory.
type Entry struct {
	Name string `json:"name" jsonschema:"The entry's name."`
	Dir  bool   `json:"dir" jsonschema:"Whether it is a directory."`
	Size int64  `json:"size" jsonschema:"A file's size in bytes; 0 for a directory."`
	Type string `json:"type,omitempty" jsonschema:"For a file that is not a regular file, what it is: named pipe, socket or device. The tools do not open it."`
}

// Listing is the result of ls.
type Listing struct {
	Path    string  `json:"path" jsonschema:"The directory listed; empty for the root."`
	Entries []Entry `json:"entries" jsonschema:"Its children: directories first, then files, each sorted by name."`
	Hidden  int     `json:"hidden,omitempty" jsonschema:"How many children were left out: names starting with a dot, and what .gitignore files ignore; all lists them."`
	// Truncated and NextCursor page the entries.
	Truncated  bool   `json:"truncated" jsonschema:"Whether the listing stopped at its cap of entries or its 64 KiB page; more entries follow."`
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"Pass it as cursor, with the same path and all, for the next entries; present when truncated."`
}

// Render lists directories with a trailing slash, then files with their
// sizes (or, for a pipe, socket or device, its kind):
//
//	docs/
//	main.go (120 bytes)
func (l *Listing) Render() string {
	if len(l.Entries) == 0 {
		return "(empty directory)"
	}
	var b strings.Builder
	for i, e := range l.Entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case e.Dir:
			b.WriteString(e.Name + "/")
		case e.Type != "":
			fmt.Fprintf(&b, "%s (%s)", e.Name, e.Type)
		default:
			fmt.Fprintf(&b, "%s (%s)", e.Name, plural(int(e.Size), "byte", "bytes"))
		}
	}
	if l.Truncated {
		fmt.Fprintf(&b, "\n[more entries follow: call ls again with cursor %q]", l.NextCursor)
	}
	return b.String()
}

func (s *settings) ls() *tools.Tool {
	return tools.New("ls",
		"List a workspace directory's children: subdirectories (with a trailing /), then files with sizes. Hidden entries (dot names, .gitignore'd) only with all. Pages by next_cursor.",
		tools.Annotations{Title: "List directory", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p LsParams) (tools.Result[*Listing], error) {
			w := From(ctx.Session)
			dir, err := Normalize(p.Path)
			if err != nil {
				return tools.Fail[*Listing](err.Error()), nil
			}
			search := cursor{Tool: "ls", Path: p.Path, Pattern: fmt.Sprint(p.All)}
			from, err := decodeCursor(p.Cursor, search)
			if err != nil {
				return tools.Fail[*Listing](err.Error()), nil
			}
			infos, err := w.st.list(dir)
			if err != nil {
				if errorsIsNotDir(err) {
					return tools.Fail[*Listing]("Cannot list a file path; provide a directory."), nil
				}
				if f := describe(err, dir, "Directory does not exist: "+display(dir), s.maxFile); f != nil {
					return tools.Fail[*Listing](f.msg), nil
				}
				return tools.Result[*Listing]{}, err
			}
			l := &Listing{Path: dir, Entries: []Entry{}}
			hides := w.hides(dir, p.All)
			size := 0
			for _, dirs := range []bool{true, false} {
				for _, in := range infos {
					// The key of an entry orders it as listed: directories
					// first, each part by name.
					key := fmt.Sprintf("%t/%s", !dirs, base(in.Path))
					switch {
					case in.Dir != dirs:
					case hides(in):
						l.Hidden++
					case from != nil && key < from.File, l.Truncated:
					case len(l.Entries) == s.maxMatches || size+len(key)+32 > PageBytes && len(l.Entries) > 0:
						l.Truncated = true
						search.File = key
						l.NextCursor = search.encode()
					default:
						size += len(key) + 32
						l.Entries = append(l.Entries, Entry{Name: base(in.Path), Dir: in.Dir, Size: in.Size, Type: in.Special})
					}
				}
			}
			msg := fmt.Sprintf("Listed %s: %s.", display(dir), plural(len(l.Entries), "entry", "entries"))
			if l.Truncated {
				msg = fmt.Sprintf("Listed %s: %s; more follow.", display(dir), plural(len(l.Entries), "entry", "entries"))
			}
			if l.Hidden > 0 {
				msg += fmt.Sprintf(" %s hidden (dot names or ignored by .gitignore); all: true lists them.", plural(l.Hidden, "entry", "entries"))
			}
			return tools.OK(msg, l), nil
		},
		tools.WithExamples(tools.Example{
			Description: "List the workspace root.",
			Input:       `{}`,
			Output:      "Listed /: 2 entries.\n\ndocs/\nmain.go (120 bytes)",
		}),
	)
}

// hides returns whether ls leaves out an entry of the directory dir: with
// all, none; otherwise those whose name starts with a dot and, unless the
// workspace includes ignored files, those the ignore rules skip.
func (w *Workspace) hides(dir string, all bool) func(Info) bool {
	if all {
		return func(Info) bool { return false }
	}
	var rules ignoreRules
	if !w.includeIgnored {
		rules = rulesAt(w.st, dir)
	}
	return func(in Info) bool {
		return strings.HasPrefix(base(in.Path), ".") || !w.includeIgnored && rules.skips(in.Path, in.Dir)
	}
}
