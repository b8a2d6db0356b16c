package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Read limits.
const (
	// DefaultReadLimit is the number of lines read_file returns by
	// default, and the most it returns.
	DefaultReadLimit = 2000
	// MaxLineBytes is the longest line read_file and grep show whole;
	// longer ones are cut with a marker.
	MaxLineBytes = 4000
	// PageBytes is the most bytes of lines (or matching lines) one
	// read_file or grep result holds, well under the default output cap;
	// the first line is returned whatever its length.
	PageBytes = 64 << 10
	// largeRead is the size from which read_file reports its progress,
	// when the client asks: before the read and after it.
	largeRead = 1 << 20
)

// ReadFileParams are the arguments of read_file.
type ReadFileParams struct {
	FilePath string `json:"file_path" jsonschema:"Path of the file, relative to the workspace root."`
	Offset   int    `json:"offset,omitempty" jsonschema:"First line to return, counted from 0; a negative offset counts back from the end, so -100 reads the last 100 lines." default:"0"`
	Limit    int    `json:"limit,omitempty" jsonschema:"How many lines to return, 1 to 2000." default:"2000"`
}

// FileLines is the result of read_file: a window of a file's lines.
type FileLines struct {
	Path       string   `json:"path" jsonschema:"The file read."`
	Offset     int      `json:"offset" jsonschema:"The 0-based index of the first line returned."`
	Lines      []string `json:"lines" jsonschema:"The lines returned, without their newlines."`
	TotalLines int      `json:"total_lines" jsonschema:"The number of lines in the whole file."`
	Truncated  bool     `json:"truncated" jsonschema:"Whether more lines follow those returned (the limit or the 64 KiB page was reached)."`
	NextOffset int      `json:"next_offset,omitempty" jsonschema:"The offset that reads on from the last line returned; present when truncated."`
	MimeType   string   `json:"mime_type,omitempty" jsonschema:"For an image or a PDF, its media type: the file comes as an image or embedded resource block, and lines is empty."`
	Size       int      `json:"size,omitempty" jsonschema:"For an image or a PDF, its size in bytes."`
}

// Render numbers the lines from 1, "%4d | text"; overlong lines are cut
// with a marker.
func (f *FileLines) Render() string {
	switch {
	case f.MimeType != "":
		return ""
	case len(f.Lines) == 0:
		return "(no lines)"
	}
	var b strings.Builder
	for i, line := range f.Lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%4d | %s", f.Offset+i+1, truncateLine(line, MaxLineBytes))
	}
	return b.String()
}

func (s *settings) readFile() *tools.Tool {
	return tools.New("read_file",
		"Read a workspace text file as numbered lines, 2000 lines or 64 KiB at a time (when truncated, call again with next_offset; a negative offset reads the end). Images and PDFs come as content blocks.",
		tools.Annotations{Title: "Read file", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p ReadFileParams) (tools.Result[*FileLines], error) {
			if p.Limit < 1 || p.Limit > DefaultReadLimit {
				return tools.Fail[*FileLines](fmt.Sprintf("limit must be between 1 and %d.", DefaultReadLimit)), nil
			}
			path, err := normalizeFile(p.FilePath)
			if err != nil {
				return tools.Fail[*FileLines](err.Error()), nil
			}
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[*FileLines]{}, err
			}
			out, msg, block, err := s.read(ctx, v, path, p.Offset, p.Limit, PageBytes)
			var f *failure
			switch {
			case errors.As(err, &f):
				return tools.Fail[*FileLines](f.msg), nil
			case err != nil:
				return tools.Result[*FileLines]{}, err
			}
			r := tools.OK(msg, out)
			if block != nil {
				r.Content = []mcp.Content{block}
			}
			return r, nil
		},
		tools.WithExamples(tools.Example{
			Description: "Read the first two lines of a file.",
			Input:       `{"file_path":"notes/todo.md","limit":2}`,
			Output:      "Read file notes/todo.md (lines 1-2 of 3).\n\n   1 | # To do\n   2 | - write tests",
		}, tools.Example{
			Description: "Look at an image.",
			Input:       `{"file_path":"docs/diagram.png"}`,
			Output:      "Read image docs/diagram.png (image/png, 20480 bytes); its content is attached.",
		}),
	)
}

// read reads the file at path (normalised) for read_file and
// read_multiple_files: a page of its lines from offset, at most limit
// lines and budget bytes of them, with the message that says which; or,
// for an image or a PDF, its content block. Errors about the file are a
// *failure.
func (s *settings) read(ctx *tools.Context, v *view, path string, offset, limit, budget int) (*FileLines, string, mcp.Content, error) {
	large := int64(0)
	if info, err := v.st.stat(path); err == nil && info.Size >= largeRead {
		large = info.Size
		_ = ctx.Progress(0, float64(large), fmt.Sprintf("Reading %s (%d bytes).", path, large))
	}
	data, err := v.ReadFile(path)
	if large > 0 && err == nil {
		_ = ctx.Progress(float64(large), float64(large), fmt.Sprintf("Read %s; numbering its lines.", path))
	}
	if err != nil {
		if f := describe(err, path, "File does not exist: "+path, s.maxFile); f != nil {
			return nil, "", nil, f
		}
		return nil, "", nil, err
	}
	if mime := mediaType(path, data); mime != "" {
		block, f := mediaBlock(path, mime, data)
		if f != nil {
			return nil, "", nil, f
		}
		return &FileLines{Path: path, Lines: []string{}, MimeType: mime, Size: len(data)}, mediaMessage(path, mime, len(data)), block, nil
	}
	if isBinary(data) {
		return nil, "", nil, &failure{msg: binaryMessage(path)}
	}
	lines := splitLines(string(data))
	out := page(lines, offset, limit, budget)
	out.Path = path
	var msg string
	switch {
	case out.Truncated:
		msg = fmt.Sprintf("Read file %s (lines %d-%d of %d); more follow: call again with offset %d.", path, out.Offset+1, out.Offset+len(out.Lines), len(lines), out.NextOffset)
	case len(out.Lines) > 0:
		msg = fmt.Sprintf("Read file %s (lines %d-%d of %d).", path, out.Offset+1, out.Offset+len(out.Lines), len(lines))
	case len(lines) == 0:
		msg = fmt.Sprintf("Read file %s (0 lines: the file is empty).", path)
	default:
		msg = fmt.Sprintf("Read file %s (0 lines: offset %d is past the end; the file has %s).", path, offset, plural(len(lines), "line", "lines"))
	}
	return out, msg, nil, nil
}

// page returns the lines of a read_file result: limit lines from offset
// (counted back from the end when negative), fewer when they would hold
// more than budget bytes, at least one.
func page(lines []string, offset, limit, budget int) *FileLines {
	if offset < 0 {
		offset = max(0, len(lines)+offset)
	}
	out := &FileLines{Offset: offset, TotalLines: len(lines), Lines: []string{}}
	size := 0
	for i := offset; i < len(lines) && i < offset+limit; i++ {
		size += len(lines[i]) + 1
		if size > budget && i > offset {
			break
		}
		out.Lines = append(out.Lines, lines[i])
	}
	if end := offset + len(out.Lines); end < len(lines) && len(out.Lines) > 0 {
		out.Truncated, out.NextOffset = true, end
	}
	return out
}

func binaryMessage(p string) string {
	return fmt.Sprintf("File %s is binary; only UTF-8 text can be read or edited.", p)
}
