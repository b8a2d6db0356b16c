package evaluation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// fileSystem is what the fs builtins reach: the call's workspace
// (workspace.Files), or, in a child process, the parent over the pipe.
type fileSystem interface {
	Read(path string) (string, error)
	Write(path, content string) (string, error)
	List(path string) ([]workspace.Entry, error)
	Glob(pattern string) ([]string, bool, error)
	Grep(pattern, glob string) ([]workspace.Match, bool, error)
}

// limits bound one evaluation.
type limits struct {
	Steps  uint64 `json:"steps"`
	Output int    `json:"output"`
}

// run is what an evaluation produced: the value of its last line, what it
// printed, and how it ended.
type run struct {
	// Value is the JSON of the last line's value, when that line is an
	// expression whose value is not None.
	Value json.RawMessage `json:"value,omitempty"`
	// Output is what print wrote, cut at the output limit.
	Output string `json:"output"`
	// Truncated says Output was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Steps is how many steps the snippet took.
	Steps uint64 `json:"steps"`
	// Error is why the snippet failed, as the model reads it; empty when
	// it succeeded.
	Error string `json:"error,omitempty"`
}

// fileName names the snippet in positions and tracebacks.
const fileName = "snippet"

// fileOptions are the dialect: while loops, recursion, control flow at the
// top level and reassigned globals are allowed, so snippets read like
// short Python scripts.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

// evaluate runs code with the fs builtins over files and the json module,
// within lim, until ctx is done. Its value is that of the last line when
// that line is an expression, as in a notebook.
func evaluate(ctx context.Context, code string, files fileSystem, lim limits) *run {
	out := &run{}
	var printed bytes.Buffer
	thread := &starlark.Thread{
		Name: fileName,
		Print: func(_ *starlark.Thread, msg string) {
			if printed.Len()+len(msg)+1 > lim.Output {
				out.Truncated = true
				msg = msg[:max(0, min(len(msg), lim.Output-printed.Len()))]
				printed.WriteString(msg)
				return
			}
			printed.WriteString(msg)
			printed.WriteByte('\n')
		},
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, errors.New("load is not available: a snippet is one file; use fs.read for data")
		},
	}
	thread.SetMaxExecutionSteps(lim.Steps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("the call's deadline passed") })
	defer stop()
	defer func() {
		out.Output = printed.String()
		out.Steps = thread.ExecutionSteps()
	}()

	predeclared := starlark.StringDict{"fs": fsModule(files), "json": starjson.Module}
	f, err := fileOptions.Parse(fileName, code, 0)
	if err != nil {
		out.Error = describeError(err, code, lim)
		return out
	}
	var last syntax.Expr
	if n := len(f.Stmts); n > 0 {
		if e, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			last, f.Stmts = e.X, f.Stmts[:n-1]
		}
	}
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		out.Error = describeError(err, code, lim)
		return out
	}
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		out.Error = describeError(err, code, lim)
		return out
	}
	if last == nil {
		return out
	}
	env := starlark.StringDict{}
	for k, v := range predeclared {
		env[k] = v
	}
	for k, v := range globals {
		env[k] = v
	}
	v, err := starlark.EvalExprOptions(fileOptions, thread, last, env)
	if err != nil {
		out.Error = describeError(err, code, lim)
		return out
	}
	if v != starlark.None {
		out.Value = toJSON(thread, v)
	}
	return out
}

// toJSON returns the JSON of v, or, for a value JSON cannot hold (a
// function), its Starlark form as a JSON string.
func toJSON(thread *starlark.Thread, v starlark.Value) json.RawMessage {
	s, err := starlark.Call(thread, starjson.Module.Members["encode"], starlark.Tuple{v}, nil)
	if err == nil {
		if str, ok := starlark.AsString(s); ok {
			return json.RawMessage(str)
		}
	}
	b, _ := json.Marshal(v.String())
	return b
}

// describeError turns an error of the parser, the resolver or the
// interpreter into the message the model reads: where it is (line and
// column, with the line and a caret), and what is wrong.
func describeError(err error, code string, lim limits) string {
	var se syntax.Error
	var rl resolve.ErrorList
	var ee *starlark.EvalError
	switch {
	case errors.As(err, &se):
		return "Syntax error " + at(se.Pos, code) + se.Msg + hint(se.Msg, code, se.Pos)
	case errors.As(err, &rl) && len(rl) > 0:
		var b strings.Builder
		for i, e := range rl {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("Error " + at(e.Pos, code) + e.Msg)
		}
		return b.String()
	case errors.As(err, &ee):
		msg := ee.Msg
		if strings.Contains(msg, "too many steps") {
			msg = fmt.Sprintf("the snippet ran out of steps (the limit is %d); do less work per call, or loop over fewer items", lim.Steps)
		}
		if strings.HasPrefix(msg, "Starlark computation cancelled: ") {
			msg = "the snippet was stopped: " + strings.TrimPrefix(msg, "Starlark computation cancelled: ")
		}
		var b strings.Builder
		b.WriteString("Error: " + msg)
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			fr := ee.CallStack[i]
			if fr.Pos.Filename() != fileName {
				continue
			}
			name := fr.Name
			if name == "<expr>" {
				name = "<toplevel>" // the last line, evaluated apart
			}
			fmt.Fprintf(&b, "\n  at line %d, column %d, in %s", fr.Pos.Line, fr.Pos.Col, name)
		}
		return b.String()
	}
	return "Error: " + err.Error()
}

// at says where pos is, "at line 3, column 5:", and quotes the line with a
// caret under the column.
func at(pos syntax.Position, code string) string {
	lines := strings.Split(code, "\n")
	if pos.Line < 1 || int(pos.Line) > len(lines) {
		return fmt.Sprintf("at line %d, column %d: ", pos.Line, pos.Col)
	}
	line := lines[pos.Line-1]
	caret := strings.Repeat(" ", max(0, int(pos.Col)-1)) + "^"
	return fmt.Sprintf("at line %d, column %d:\n  %s\n  %s\n", pos.Line, pos.Col, line, caret)
}

// hint adds, to a syntax error caused by Python that Starlark does not
// have, what to write instead.
func hint(msg, code string, pos syntax.Position) string {
	line := ""
	if lines := strings.Split(code, "\n"); pos.Line >= 1 && int(pos.Line) <= len(lines) {
		line = strings.TrimSpace(lines[pos.Line-1])
	}
	for _, h := range []struct{ prefix, text string }{
		{"import ", "Starlark has no import: fs and json are already there."},
		{"from ", "Starlark has no import: fs and json are already there."},
		{"class ", "Starlark has no classes: use dicts and functions."},
		{"try:", "Starlark has no try/except: an error ends the snippet, and the call changes nothing."},
		{"with ", "Starlark has no with: use fs.read and fs.write."},
	} {
		if strings.HasPrefix(line, h.prefix) {
			return "\n" + h.text
		}
	}
	if strings.Contains(msg, "got string literal") && (strings.Contains(line, `f"`) || strings.Contains(line, "f'")) {
		return "\nStarlark has no f-strings: use \"%s\" % x or \"{}\".format(x)."
	}
	return ""
}

// fsModule returns the fs module over files.
func fsModule(files fileSystem) *starlarkstruct.Module {
	builtin := func(name string, fn func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin("fs."+name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			v, err := fn(args, kwargs)
			switch {
			case err == nil:
				return v, nil
			case strings.HasPrefix(err.Error(), b.Name()+": "):
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		})
	}
	return &starlarkstruct.Module{Name: "fs", Members: starlark.StringDict{
		"read": builtin("read", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var path string
			if err := starlark.UnpackPositionalArgs("fs.read", args, kwargs, 1, &path); err != nil {
				return nil, err
			}
			s, err := files.Read(path)
			return starlark.String(s), err
		}),
		"write": builtin("write", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var path, content string
			if err := starlark.UnpackPositionalArgs("fs.write", args, kwargs, 2, &path, &content); err != nil {
				return nil, err
			}
			_, err := files.Write(path, content)
			return starlark.None, err
		}),
		"ls": builtin("ls", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			path := ""
			if err := starlark.UnpackPositionalArgs("fs.ls", args, kwargs, 0, &path); err != nil {
				return nil, err
			}
			entries, err := files.List(path)
			if err != nil {
				return nil, err
			}
			names := make([]starlark.Value, len(entries))
			for i, e := range entries {
				if e.Dir {
					e.Name += "/"
				}
				names[i] = starlark.String(e.Name)
			}
			return starlark.NewList(names), nil
		}),
		"glob": builtin("glob", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var pattern string
			if err := starlark.UnpackPositionalArgs("fs.glob", args, kwargs, 1, &pattern); err != nil {
				return nil, err
			}
			paths, capped, err := files.Glob(pattern)
			if err != nil {
				return nil, err
			}
			if capped {
				return nil, fmt.Errorf("more than %d files match %q; narrow the pattern", len(paths), pattern)
			}
			out := make([]starlark.Value, len(paths))
			for i, p := range paths {
				out[i] = starlark.String(p)
			}
			return starlark.NewList(out), nil
		}),
		"grep": builtin("grep", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var pattern, glob string
			if err := starlark.UnpackPositionalArgs("fs.grep", args, kwargs, 1, &pattern, &glob); err != nil {
				return nil, err
			}
			matches, capped, err := files.Grep(pattern, glob)
			if err != nil {
				return nil, err
			}
			if capped {
				return nil, fmt.Errorf("more than %d lines match %q; narrow the pattern or the glob", len(matches), pattern)
			}
			out := make([]starlark.Value, len(matches))
			for i, m := range matches {
				d := starlark.NewDict(3)
				_ = d.SetKey(starlark.String("path"), starlark.String(m.Path))
				_ = d.SetKey(starlark.String("line"), starlark.MakeInt(m.Line))
				_ = d.SetKey(starlark.String("text"), starlark.String(m.Text))
				out[i] = d
			}
			return starlark.NewList(out), nil
		}),
	}}
}
