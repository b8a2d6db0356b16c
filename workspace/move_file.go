package workspace

import (
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// MoveFileParams are the arguments of move_file.
type MoveFileParams struct {
	Source      string `json:"source" jsonschema:"File or directory to move, relative to the workspace root."`
	Destination string `json:"destination" jsonschema:"Its new path, relative to the workspace root; missing parent directories are created."`
	Overwrite   bool   `json:"overwrite,omitempty" jsonschema:"Replace a file at destination; otherwise an existing destination is an error. A directory at destination is never replaced." default:"false"`
}

func (s *settings) moveFile() *tools.Tool {
	return tools.New("move_file",
		"Move or rename a workspace file or directory, also into another directory; an existing destination file is replaced only with overwrite: true.",
		tools.Annotations{Title: "Move file", Destructive: true},
		func(ctx *tools.Context, p MoveFileParams) (tools.Result[any], error) {
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[any]{}, err
			}
			return s.doMove(ctx, v, p)
		},
		tools.WithExamples(tools.Example{
			Description: "Rename a file into another directory.",
			Input:       `{"source":"notes/todo.md","destination":"archive/todo-2025.md"}`,
			Output:      "Moved file notes/todo.md to archive/todo-2025.md.",
		}),
	)
}

func (s *settings) doMove(ctx *tools.Context, w *view, p MoveFileParams) (tools.Result[any], error) {
	src, err := normalizeFile(p.Source)
	if err != nil {
		return tools.Fail[any]("source: " + err.Error()), nil
	}
	dst, err := normalizeFile(p.Destination)
	if err != nil {
		return tools.Fail[any]("destination: " + err.Error()), nil
	}
	fail := func(err error, path, notExist string) (tools.Result[any], error) {
		if f := describe(err, path, notExist, s.maxFile); f != nil {
			return failed[any](w, f), nil
		}
		return tools.Result[any]{}, err
	}
	if err := lockFiles(ctx, w, src, dst); err != nil {
		return fail(err, src, "")
	}
	from, err := w.st.stat(src)
	if err != nil {
		return fail(err, src, "No such file or directory: "+src)
	}
	switch {
	case src == dst:
		return tools.Fail[any](fmt.Sprintf("Source and destination are the same path: %s.", src)), nil
	case from.Dir && within(dst, src):
		return tools.Fail[any](fmt.Sprintf("Cannot move directory %s into itself (%s).", src, dst)), nil
	}
	to, err := w.st.stat(dst)
	exists := err == nil
	switch {
	case exists && to.Dir:
		return tools.Fail[any](fmt.Sprintf("Destination %s is a directory; name the new path itself, such as %s.", dst, join(dst, base(src)))), nil
	case exists && !p.Overwrite:
		return tools.Fail[any](fmt.Sprintf("Destination %s already exists; pass overwrite: true to replace it.", dst)), nil
	case exists && from.Dir:
		return tools.Fail[any](fmt.Sprintf("Destination %s is a file; a directory cannot replace it.", dst)), nil
	case err != nil && !errors.Is(err, errNotExist):
		return fail(err, dst, "")
	}
	if err := w.st.move(src, dst); err != nil {
		var special *specialError
		if errors.As(err, &special) && special.path != "" {
			return tools.Fail[any](fmt.Sprintf("Cannot move %s: %s is a %s, which the workspace does not move.", src, special.path, special.kind)), nil
		}
		return fail(err, dst, "No such file or directory: "+src)
	}
	kind := "file"
	if from.Dir {
		kind = "directory"
	}
	msg := fmt.Sprintf("Moved %s %s to %s.", kind, src, dst)
	if exists {
		msg = fmt.Sprintf("Moved %s %s to %s, replacing the file there.", kind, src, dst)
	}
	return tools.OK[any](msg, nil), nil
}
