package workspace

import (
	"fmt"
	"strings"

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
}

// Render numbers the lines from 1, "%4d | text"; overlong lines are cut
// with a marker.
func (f *FileLines) Render() string {
	if len(f.Lines) == 0 {
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
		"Read a text file of the workspace as numbered lines, at most 2000 lines or 64 KiB at a time; when truncated, call again with next_offset. A negative offset reads the end of the file.",
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
					return tools.Fail[*FileLines](f.msg), nil
				}
				return tools.Result[*FileLines]{}, err
			}
			if isBinary(data) {
				return tools.Fail[*FileLines](binaryMessage(path)), nil
			}
			lines := splitLines(string(data))
			out := page(lines, p.Offset, p.Limit)
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
				msg = fmt.Sprintf("Read file %s (0 lines: offset %d is past the end; the file has %s).", path, p.Offset, plural(len(lines), "line", "lines"))
			}
			return tools.OK(msg, out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Read the first two lines of a file.",
			Input:       `{"file_path":"notes/todo.md","limit":2}`,
			Output:      "Read file notes/todo.md (lines 1-2 of 3).\n\n   1 | # To do\n   2 | - write tests",
		}),
	)
}

// page returns the lines of a read_file result: limit lines from offset
// (counted back from the end when negative), fewer when they would hold
// more than PageBytes, at least one.
func page(lines []string, offset, limit int) *FileLines {
	if offset < 0 {
		offset = max(0, len(lines)+offset)
	}
	out := &FileLines{Offset: offset, TotalLines: len(lines), Lines: []string{}}
	size := 0
	for i := offset; i < len(lines) && i < offset+limit; i++ {
		size += len(lines[i]) + 1
		if size > PageBytes && i > offset {
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
