package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// MaxReadPaths is the most files one read_multiple_files call reads.
const MaxReadPaths = 20

// ReadMultipleFilesParams are the arguments of read_multiple_files.
type ReadMultipleFilesParams struct {
	Paths []string `json:"paths" jsonschema:"Files to read, relative to the workspace root; 1 to 20."`
}

// FileRead is one file of a read_multiple_files result: its lines as
// read_file returns them, or the error that reading it met.
type FileRead struct {
	Path  string     `json:"path" jsonschema:"The path as given, normalised when it could be."`
	Error string     `json:"error,omitempty" jsonschema:"Why the file could not be read; the other files are read anyway."`
	File  *FileLines `json:"file,omitempty" jsonschema:"The file's first lines, as read_file returns them; when truncated, read on with read_file and next_offset."`
}

// MultipleFiles is the result of read_multiple_files.
type MultipleFiles struct {
	Files  []FileRead `json:"files" jsonschema:"One entry per path, in the order given."`
	Failed int        `json:"failed,omitempty" jsonschema:"How many paths could not be read."`
}

// Render shows each file under a header: its numbered lines, or its
// error.
func (m *MultipleFiles) Render() string {
	var b strings.Builder
	for i, f := range m.Files {
		if i > 0 {
			b.WriteString("\n\n")
		}
		switch {
		case f.Error != "":
			fmt.Fprintf(&b, "== %s: error ==\n%s", f.Path, f.Error)
		case f.File.MimeType != "":
			fmt.Fprintf(&b, "== %s: %s, %s, attached ==", f.Path, f.File.MimeType, plural(f.File.Size, "byte", "bytes"))
		default:
			header := fmt.Sprintf("%s of %d", plural(len(f.File.Lines), "line", "lines"), f.File.TotalLines)
			if f.File.Truncated {
				header += fmt.Sprintf("; more follow from offset %d", f.File.NextOffset)
			}
			fmt.Fprintf(&b, "== %s (%s) ==\n%s", f.Path, header, f.File.Render())
		}
	}
	return b.String()
}

func (s *settings) readMultipleFiles() *tools.Tool {
	return tools.New("read_multiple_files",
		"Read several workspace files in one call: each file's first lines (as read_file, up to 64 KiB of lines in all), or that file's own error; one bad path does not fail the others.",
		tools.Annotations{Title: "Read multiple files", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p ReadMultipleFilesParams) (tools.Result[*MultipleFiles], error) {
			if len(p.Paths) == 0 || len(p.Paths) > MaxReadPaths {
				return tools.Fail[*MultipleFiles](fmt.Sprintf("Provide 1 to %d paths; got %d.", MaxReadPaths, len(p.Paths))), nil
			}
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[*MultipleFiles]{}, err
			}
			out := &MultipleFiles{Files: make([]FileRead, 0, len(p.Paths))}
			var blocks []mcp.Content
			budget, media := PageBytes, MaxMediaBytes
			for _, raw := range p.Paths {
				path, err := normalizeFile(raw)
				if err != nil {
					out.Files = append(out.Files, FileRead{Path: raw, Error: err.Error()})
					out.Failed++
					continue
				}
				lines, _, block, err := s.read(ctx, v, path, 0, DefaultReadLimit, max(budget, 1))
				var f *failure
				switch {
				case errors.As(err, &f):
					// Not seen: the policy must not count it as read.
					v.observe(path, nil, false)
					out.Files = append(out.Files, FileRead{Path: path, Error: f.msg})
					out.Failed++
					continue
				case err != nil:
					return tools.Result[*MultipleFiles]{}, err
				}
				if lines.MimeType != "" && lines.Size > media {
					v.observe(path, nil, false)
					out.Files = append(out.Files, FileRead{Path: path, Error: fmt.Sprintf("The images and PDFs of one call are limited to %d bytes in all; read %s with read_file.", MaxMediaBytes, path)})
					out.Failed++
					continue
				}
				media -= lines.Size
				for _, l := range lines.Lines {
					budget -= len(l) + 1
				}
				if block != nil {
					blocks = append(blocks, block)
				}
				out.Files = append(out.Files, FileRead{Path: path, File: lines})
			}
			msg := fmt.Sprintf("Read %s.", plural(len(p.Paths)-out.Failed, "file", "files"))
			if out.Failed > 0 {
				msg = fmt.Sprintf("Read %s; %d could not be read.", plural(len(p.Paths)-out.Failed, "file", "files"), out.Failed)
			}
			r := tools.OK(msg, out)
			r.Content = blocks
			return r, nil
		},
		tools.WithExamples(tools.Example{
			Description: "Read two files at once; one of them is missing.",
			Input:       `{"paths":["go.mod","missing.go"]}`,
			Output:      "Read 1 file; 1 could not be read.\n\n== go.mod (1 line of 1) ==\n   1 | module example.com/calc\n\n== missing.go: error ==\nFile does not exist: missing.go",
		}),
	)
}
