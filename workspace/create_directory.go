package workspace

import (
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/tools"
)

// CreateDirectoryParams are the arguments of create_directory.
type CreateDirectoryParams struct {
	Path string `json:"path" jsonschema:"Directory to create, relative to the workspace root; missing parents are created too."`
}

func (s *settings) createDirectory() *tools.Tool {
	return tools.New("create_directory",
		"Create a workspace directory and its missing parents; a directory already there is fine.",
		tools.Annotations{Title: "Create directory", Idempotent: true},
		func(ctx *tools.Context, p CreateDirectoryParams) (tools.Result[any], error) {
			path, err := Normalize(p.Path)
			if err != nil {
				return tools.Fail[any](err.Error()), nil
			}
			if path == "" {
				return tools.OK[any]("The workspace root already exists.", nil), nil
			}
			v, err := viewOf(ctx)
			if err != nil {
				return tools.Result[any]{}, err
			}
			made, err := v.st.mkdir(path)
			var in *parentError
			if errors.As(err, &in) && in.path == path {
				return tools.Fail[any](fmt.Sprintf("%s is a file; a directory cannot be created there.", path)), nil
			}
			if err != nil {
				if f := describe(err, path, "", s.maxFile); f != nil {
					return tools.Fail[any](f.msg), nil
				}
				return tools.Result[any]{}, err
			}
			if !made {
				return tools.OK[any](fmt.Sprintf("Directory %s already exists.", path), nil), nil
			}
			return tools.OK[any](fmt.Sprintf("Created directory %s.", path), nil), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Create nested directories.",
			Input:       `{"path":"src/internal/cache"}`,
			Output:      "Created directory src/internal/cache.",
		}),
	)
}
