package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// EditFileParams are the arguments of edit_file.
type EditFileParams struct {
	FilePath   string `json:"file_path" jsonschema:"Path of the file, relative to the workspace root."`
	OldString  string `json:"old_string" jsonschema:"The exact text to replace; it must occur in the file, once unless replace_all is set."`
	NewString  string `json:"new_string" jsonschema:"The text to put in its place."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence instead of requiring exactly one." default:"false"`
}

func (s *settings) editFile() *tools.Tool {
	return tools.New("edit_file",
		"Replace an exact substring of a workspace text file: exactly one occurrence, or all with replace_all.",
		tools.Annotations{Title: "Edit file"},
		func(ctx *tools.Context, p EditFileParams) (tools.Result[any], error) {
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[any]{}, err
			}
			return s.doEdit(ctx, v, p)
		},
		tools.WithExamples(tools.Example{
			Description: "Change one line of a file read before.",
			Input:       `{"file_path":"notes/todo.md","old_string":"- write tests","new_string":"- write more tests"}`,
			Output:      "Replaced 1 occurrence in notes/todo.md.",
		}, tools.Example{
			Description: "An old_string whose indentation is not the file's: the error shows the lines to copy.",
			Input:       `{"file_path":"main.go","old_string":"    return nil","new_string":"    return err"}`,
			Output:      "old_string not found in main.go. Line 12 matches it except for whitespace (indentation); copy old_string from the file as it is:\n--- old_string\n+++ main.go\n@@ -1,1 +12,1 @@\n-    return nil\n+→return nil\n(→ is a tab, · a space at the end of a line, ␍ a carriage return)",
		}),
	)
}

func (s *settings) doEdit(ctx *tools.Context, w *view, p EditFileParams) (tools.Result[any], error) {
	path, err := normalizeFile(p.FilePath)
	if err != nil {
		return tools.Fail[any](err.Error()), nil
	}
	if p.OldString == "" {
		return tools.Fail[any]("old_string must not be empty."), nil
	}
	if strings.IndexByte(p.NewString, 0) >= 0 {
		return tools.Fail[any]("new_string must be UTF-8 text; it contains a NUL byte."), nil
	}
	if err := lockFiles(ctx, w, path); err != nil {
		if f := describe(err, path, "", s.maxFile); f != nil {
			return tools.Fail[any](f.msg), nil
		}
		return tools.Result[any]{}, err
	}
	data, err := w.ReadFile(path)
	if err != nil {
		if f := describe(err, path, "File does not exist: "+path, s.maxFile); f != nil {
			return failed[any](w, f), nil
		}
		return tools.Result[any]{}, err
	}
	if isBinary(data) {
		return tools.Fail[any](binaryMessage(path)), nil
	}
	text := string(data)
	r := replacementIn(text, p.OldString, p.NewString)
	n := strings.Count(text, r.old)
	switch {
	case n == 0:
		return tools.Fail[any](fmt.Sprintf("old_string not found in %s.", path) + r.nearMiss(text, p.OldString, path)), nil
	case n > 1 && !p.ReplaceAll:
		return tools.Fail[any](fmt.Sprintf("old_string matches %d times in %s; add context or set replace_all.", n, path)), nil
	}
	out := r.apply(text, n)
	if k := int64(len(out)); k > s.maxFile {
		return tools.Fail[any](fmt.Sprintf("The edited file would be %d bytes; the limit is %d bytes.", k, s.maxFile)), nil
	}
	if err := w.WriteFile(path, []byte(out)); err != nil {
		if f := describe(err, path, "File does not exist: "+path, s.maxFile); f != nil {
			return failed[any](w, f), nil
		}
		return tools.Result[any]{}, err
	}
	return tools.OK[any](fmt.Sprintf("Replaced %s in %s.", plural(n, "occurrence", "occurrences"), path), nil), nil
}
