package workspace

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// RmParams are the arguments of rm.
type RmParams struct {
	Path string `json:"path" jsonschema:"File or directory to remove, relative to the workspace root; a directory goes with everything in it."`
}

func (s *settings) rm() *tools.Tool {
	return tools.New("rm",
		"Remove a file, or a directory and everything in it, from the workspace. The root cannot be removed.",
		tools.Annotations{Title: "Remove", Destructive: true},
		func(ctx *tools.Context, p RmParams) (tools.Result[any], error) {
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[any]{}, err
			}
			return s.doRm(ctx, v, p)
		},
		tools.WithExamples(tools.Example{
			Description: "Remove a directory.",
			Input:       `{"path":"build"}`,
			Output:      "Removed directory build (3 files).",
		}),
	)
}

func (s *settings) doRm(ctx *tools.Context, w *view, p RmParams) (tools.Result[any], error) {
	path, err := Normalize(p.Path)
	if err != nil {
		return tools.Fail[any](err.Error()), nil
	}
	if path == "" {
		return tools.Fail[any]("The workspace root cannot be removed."), nil
	}
	if err := lockFiles(ctx, w, path); err != nil {
		if f := describe(err, path, "", s.maxFile); f != nil {
			return tools.Fail[any](f.msg), nil
		}
		return tools.Result[any]{}, err
	}
	info, err := w.st.stat(path)
	if err != nil && !errorsIsEscape(err) {
		if f := describe(err, path, "No such file or directory: "+path, s.maxFile); f != nil {
			return failed[any](w, f), nil
		}
		return tools.Result[any]{}, err
	}
	n, err := w.Remove(path)
	if err != nil {
		if f := describe(err, path, "No such file or directory: "+path, s.maxFile); f != nil {
			return failed[any](w, f), nil
		}
		return tools.Result[any]{}, err
	}
	if info.Dir {
		return tools.OK[any](fmt.Sprintf("Removed directory %s (%s).", path, plural(n, "file", "files")), nil), nil
	}
	return tools.OK[any](fmt.Sprintf("Removed file %s.", path), nil), nil
}
