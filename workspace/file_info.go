package workspace

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// FileInfoParams are the arguments of file_info.
type FileInfoParams struct {
	Path string `json:"path,omitempty" jsonschema:"File or directory to describe, relative to the workspace root; the root when empty."`
}

// FileInfo is the result of file_info.
type FileInfo struct {
	Path     string `json:"path" jsonschema:"The path described; empty for the root."`
	Type     string `json:"type" jsonschema:"file, directory, symlink, or for what is neither a regular file nor a directory, what ls calls it: named pipe, socket or device."`
	Target   string `json:"target,omitempty" jsonschema:"For a symlink, what it leads to: file, directory, named pipe, socket or device."`
	Size     int64  `json:"size" jsonschema:"A file's size in bytes; 0 otherwise."`
	Modified string `json:"modified,omitempty" jsonschema:"When the content last changed (RFC 3339, UTC); absent in a memory workspace, which keeps no times."`
	Lines    *int   `json:"lines,omitempty" jsonschema:"For a UTF-8 text file, its number of lines."`
	Binary   bool   `json:"binary,omitempty" jsonschema:"Whether a file is not UTF-8 text (read_file shows images and PDFs, refuses other binaries)."`
}

// Render is one line per field that is set.
func (f *FileInfo) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "type: %s", f.Type)
	if f.Target != "" {
		fmt.Fprintf(&b, " (to a %s)", f.Target)
	}
	if f.Type == "file" || f.Target == "file" {
		fmt.Fprintf(&b, "\nsize: %s", plural(int(f.Size), "byte", "bytes"))
	}
	if f.Lines != nil {
		fmt.Fprintf(&b, "\nlines: %d", *f.Lines)
	}
	if f.Binary {
		b.WriteString("\nbinary: not UTF-8 text")
	}
	if f.Modified != "" {
		fmt.Fprintf(&b, "\nmodified: %s", f.Modified)
	}
	return b.String()
}

func (s *settings) fileInfo() *tools.Tool {
	return tools.New("file_info",
		"Describe a workspace path without reading it whole: type (file, directory, symlink, named pipe, ...), size, modification time (disk), and a text file's line count.",
		tools.Annotations{Title: "File info", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p FileInfoParams) (tools.Result[*FileInfo], error) {
			path, err := Normalize(p.Path)
			if err != nil {
				return tools.Fail[*FileInfo](err.Error()), nil
			}
			w := From(ctx.Session)
			in, err := w.st.lstat(path)
			if err != nil {
				if f := describe(err, path, "No such file or directory: "+display(path), s.maxFile); f != nil {
					return tools.Fail[*FileInfo](f.msg), nil
				}
				return tools.Result[*FileInfo]{}, err
			}
			out := &FileInfo{Path: path, Type: nodeType(in), Size: in.Size}
			kind := nodeType(Info{Dir: in.Dir, Special: in.Special})
			if in.Link {
				out.Target = kind
			}
			if !in.ModTime.IsZero() {
				out.Modified = in.ModTime.UTC().Format(time.RFC3339)
			}
			// Only regular files are opened: readFile refuses anything else.
			if kind == "file" {
				data, err := w.st.readFile(path, s.maxFile)
				switch {
				case err == nil && isBinary(data):
					out.Binary = true
				case err == nil:
					n := bytes.Count(data, []byte{'\n'})
					if len(data) > 0 && data[len(data)-1] != '\n' {
						n++
					}
					out.Lines = &n
				}
			}
			return tools.OK(fmt.Sprintf("Info for %s.", display(path)), out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Describe a file before reading it.",
			Input:       `{"path":"src/main.go"}`,
			Output:      "Info for src/main.go.\n\ntype: file\nsize: 120 bytes\nlines: 9\nmodified: 2025-06-01T12:00:00Z",
		}),
	)
}
