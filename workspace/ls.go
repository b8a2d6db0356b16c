package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// LsParams are the arguments of ls.
type LsParams struct {
	Path string `json:"path,omitempty" jsonschema:"Directory to list, relative to the workspace root; the root when empty."`
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
	return b.String()
}

func (s *settings) ls() *tools.Tool {
	return tools.New("ls",
		"List the immediate children of a workspace directory: subdirectories first (with a trailing /), then files with sizes.",
		tools.Annotations{Title: "List directory", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p LsParams) (tools.Result[*Listing], error) {
			w := From(ctx.Session)
			dir, err := Normalize(p.Path)
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
			l := &Listing{Path: dir, Entries: make([]Entry, 0, len(infos))}
			for _, dirs := range []bool{true, false} {
				for _, in := range infos {
					if in.Dir == dirs {
						l.Entries = append(l.Entries, Entry{Name: base(in.Path), Dir: in.Dir, Size: in.Size, Type: in.Special})
					}
				}
			}
			return tools.OK(fmt.Sprintf("Listed %s: %s.", display(dir), plural(len(l.Entries), "entry", "entries")), l), nil
		},
		tools.WithExamples(tools.Example{
			Description: "List the workspace root.",
			Input:       `{}`,
			Output:      "Listed /: 2 entries.\n\ndocs/\nmain.go (120 bytes)",
		}),
	)
}
