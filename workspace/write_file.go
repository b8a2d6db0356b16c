package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// WriteFileParams are the arguments of write_file.
type WriteFileParams struct {
	FilePath  string `json:"file_path" jsonschema:"Path of the file, relative to the workspace root; missing parent directories are created."`
	Content   string `json:"content" jsonschema:"The file's complete new content, UTF-8 text."`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"Replace the file if it exists; otherwise an existing file is an error." default:"false"`
}

func (s *settings) writeFile() *tools.Tool {
	return tools.New("write_file",
		"Create a text file in the workspace, with missing parent directories; replace an existing file only with overwrite: true.",
		tools.Annotations{Title: "Write file"},
		func(ctx *tools.Context, p WriteFileParams) (tools.Result[any], error) {
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[any]{}, err
			}
			return s.doWrite(ctx, v, p)
		},
		tools.WithExamples(tools.Example{
			Description: "Create a file.",
			Input:       `{"file_path":"notes/todo.md","content":"# To do\n"}`,
			Output:      "Created notes/todo.md (8 bytes).",
		}),
	)
}

func (s *settings) doWrite(ctx *tools.Context, w *view, p WriteFileParams) (tools.Result[any], error) {
	path, err := normalizeFile(p.FilePath)
	if err != nil {
		return tools.Fail[any](err.Error()), nil
	}
	if strings.IndexByte(p.Content, 0) >= 0 {
		return tools.Fail[any]("Content must be UTF-8 text; it contains a NUL byte."), nil
	}
	if n := int64(len(p.Content)); n > s.maxFile {
		return tools.Fail[any](fmt.Sprintf("Content is %d bytes; the limit is %d bytes.", n, s.maxFile)), nil
	}
	if err := lockFiles(ctx, w, path); err != nil {
		if f := describe(err, path, "", s.maxFile); f != nil {
			return tools.Fail[any](f.msg), nil
		}
		return tools.Result[any]{}, err
	}
	info, err := w.st.stat(path)
	exists := err == nil
	switch {
	case exists && info.Dir:
		return tools.Fail[any](fmt.Sprintf("%s is a directory, not a file.", path)), nil
	case exists && !p.Overwrite:
		return tools.Fail[any]("File already exists; use edit_file or overwrite: true."), nil
	case err != nil && !errors.Is(err, errNotExist):
		if f := describe(err, path, "", s.maxFile); f != nil {
			return tools.Fail[any](f.msg), nil
		}
		return tools.Result[any]{}, err
	}
	if err := w.WriteFile(path, []byte(p.Content)); err != nil {
		if f := describe(err, path, "", s.maxFile); f != nil {
			return tools.Fail[any](f.msg), nil
		}
		return tools.Result[any]{}, err
	}
	verb := "Created"
	if exists {
		verb = "Overwrote"
	}
	return tools.OK[any](fmt.Sprintf("%s %s (%s).", verb, path, plural(len(p.Content), "byte", "bytes")), nil), nil
}
