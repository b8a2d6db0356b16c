package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/tools"
)

// EditOp names the tool an operation of apply_edits stands for.
type EditOp string

// The operations of apply_edits.
const (
	OpWrite EditOp = "write"
	OpEdit  EditOp = "edit"
	OpRm    EditOp = "rm"
	OpMove  EditOp = "move"
)

// Enum lists the operations, for the schema.
func (EditOp) Enum() []string {
	return []string{string(OpWrite), string(OpEdit), string(OpRm), string(OpMove)}
}

// Edit is one operation of apply_edits: op, and the fields of the tool of
// that name (write_file, edit_file, rm, move_file).
type Edit struct {
	Op          EditOp  `json:"op" jsonschema:"write (as write_file), edit (as edit_file), rm (as rm) or move (as move_file)."`
	FilePath    *string `json:"file_path,omitempty" jsonschema:"write, edit: the file."`
	Content     *string `json:"content,omitempty" jsonschema:"write: the file's complete new content."`
	Overwrite   *bool   `json:"overwrite,omitempty" jsonschema:"write, move: replace an existing file."`
	Source      *string `json:"source,omitempty" jsonschema:"move: the file or directory to move."`
	Destination *string `json:"destination,omitempty" jsonschema:"move: its new path."`
	OldString   *string `json:"old_string,omitempty" jsonschema:"edit: the exact text to replace."`
	NewString   *string `json:"new_string,omitempty" jsonschema:"edit: the text to put in its place."`
	ReplaceAll  *bool   `json:"replace_all,omitempty" jsonschema:"edit: replace every occurrence."`
	Path        *string `json:"path,omitempty" jsonschema:"rm: the file or directory to remove."`
}

// fields returns the operation's fields, without op, as the JSON arguments
// of its tool, and the name of a field that does not belong to the tool.
func (e Edit) fields() (json.RawMessage, string) {
	m := map[string]any{}
	var stray []string
	put := func(name string, set bool, v any, ops ...EditOp) {
		if !set {
			return
		}
		for _, o := range ops {
			if o == e.Op {
				m[name] = v
				return
			}
		}
		stray = append(stray, name)
	}
	put("file_path", e.FilePath != nil, deref(e.FilePath), OpWrite, OpEdit)
	put("content", e.Content != nil, deref(e.Content), OpWrite)
	put("overwrite", e.Overwrite != nil, deref(e.Overwrite), OpWrite, OpMove)
	put("source", e.Source != nil, deref(e.Source), OpMove)
	put("destination", e.Destination != nil, deref(e.Destination), OpMove)
	put("old_string", e.OldString != nil, deref(e.OldString), OpEdit)
	put("new_string", e.NewString != nil, deref(e.NewString), OpEdit)
	put("replace_all", e.ReplaceAll != nil, deref(e.ReplaceAll), OpEdit)
	put("path", e.Path != nil, deref(e.Path), OpRm)
	raw, _ := json.Marshal(m)
	if len(stray) > 0 {
		return raw, stray[0]
	}
	return raw, ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// target is the path an operation names, for messages: a move's source.
func (e Edit) target() string {
	switch e.Op {
	case OpRm:
		return strings.TrimSpace(deref(e.Path))
	case OpMove:
		return strings.TrimSpace(deref(e.Source))
	}
	return strings.TrimSpace(deref(e.FilePath))
}

// paths are the paths an operation changes: a move's source and
// destination, the target of the others.
func (e Edit) paths() []string {
	if e.Op == OpMove {
		return []string{e.target(), strings.TrimSpace(deref(e.Destination))}
	}
	return []string{e.target()}
}

// ApplyEditsParams are the arguments of apply_edits.
type ApplyEditsParams struct {
	Edits []Edit `json:"edits" jsonschema:"The operations, applied in order, all or nothing."`
}

// Applied is the result of apply_edits.
type Applied struct {
	Edits []string `json:"edits" jsonschema:"What each operation did, in order."`
	Files int      `json:"files" jsonschema:"How many distinct paths the operations changed (a move changes two)."`
}

// Render lists what each operation did.
func (a *Applied) Render() string {
	var b strings.Builder
	for i, e := range a.Edits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "edits[%d]: %s", i, e)
	}
	return b.String()
}

// editHook, when set (by tests), runs before each operation of
// apply_edits.
var editHook func(ctx *tools.Context, i int) error

func (s *settings) applyEdits(write, edit, rm, move *tools.Tool) *tools.Tool {
	byOp := map[EditOp]*tools.Tool{OpWrite: write, OpEdit: edit, OpRm: rm, OpMove: move}
	return tools.New("apply_edits",
		"Apply several write, edit, rm and move operations to workspace files in order, all or nothing: if one fails, none is applied.",
		tools.Annotations{Title: "Apply edits", Destructive: true},
		func(ctx *tools.Context, p ApplyEditsParams) (tools.Result[*Applied], error) {
			if len(p.Edits) == 0 {
				return tools.Fail[*Applied]("Provide at least one edit."), nil
			}
			w, err := viewOf(ctx)
			if err != nil {
				return tools.Result[*Applied]{}, err
			}
			// Every file the operations name is locked first, in path
			// order, so that two calls never wait for each other.
			var targets []string
			for _, e := range p.Edits {
				targets = append(targets, e.paths()...)
			}
			if err := lockFiles(ctx, w, targets...); err != nil {
				if f := describe(err, "", "", s.maxFile); f != nil {
					return tools.Fail[*Applied](f.msg + " No edit was applied."), nil
				}
				return tools.Result[*Applied]{}, err
			}
			out := &Applied{Edits: make([]string, 0, len(p.Edits))}
			paths := map[string]bool{}
			for i, e := range p.Edits {
				label := fmt.Sprintf("edits[%d] (%s %s)", i, e.Op, e.target())
				// lacking fails the call for want of what (tools.Missing),
				// fail for another reason.
				lacking := func(what, msg string) (tools.Result[*Applied], error) {
					return tools.Missing[*Applied](what, fmt.Sprintf("%s failed: %s No edit was applied.", label, msg)), nil
				}
				fail := func(msg string) (tools.Result[*Applied], error) { return lacking("", msg) }
				if editHook != nil {
					if err := editHook(ctx, i); err != nil {
						return tools.Result[*Applied]{}, fmt.Errorf("%s: %w", label, err)
					}
				}
				if err := ctx.Err(); err != nil {
					return fail("the call ran out of time before it.")
				}
				t := byOp[e.Op]
				args, stray := e.fields()
				if stray != "" {
					return fail(fmt.Sprintf("field %s does not apply to op %s.", stray, e.Op))
				}
				params, err := t.Parse(args)
				if err != nil {
					return fail("Invalid arguments: " + err.Error() + ".")
				}
				var done func(*tools.Outcome) error
				if ctx.Call.Authorise != nil {
					if done, err = ctx.Call.Authorise(t.Name(), params); err != nil {
						var d *policy.Denial
						if errors.As(err, &d) {
							return lacking(d.Missing, err.Error())
						}
						return fail(err.Error())
					}
				}
				var r tools.Result[any]
				switch pp := params.(type) {
				case WriteFileParams:
					r, err = s.doWrite(ctx, w, pp)
				case EditFileParams:
					r, err = s.doEdit(ctx, w, pp)
				case RmParams:
					r, err = s.doRm(ctx, w, pp)
				case MoveFileParams:
					r, err = s.doMove(ctx, w, pp)
				}
				if err != nil {
					return tools.Result[*Applied]{}, fmt.Errorf("%s: %w", label, err)
				}
				if !r.Success {
					return lacking(r.Missing, r.Message)
				}
				if done != nil {
					if err := done(&tools.Outcome{Message: r.Message, Success: true}); err != nil {
						return tools.Result[*Applied]{}, fmt.Errorf("%s: %w", label, err)
					}
				}
				for _, p := range e.paths() {
					if n, err := Normalize(p); err == nil {
						paths[n] = true
					}
				}
				out.Edits = append(out.Edits, r.Message)
			}
			out.Files = len(paths)
			return tools.OK(fmt.Sprintf("Applied %s to %s.", plural(len(p.Edits), "edit", "edits"), plural(out.Files, "file", "files")), out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Rename a function in one file and add a test, together.",
			Input:       `{"edits":[{"op":"edit","file_path":"calc.go","old_string":"func Sum(","new_string":"func Total("},{"op":"write","file_path":"calc_test.go","content":"package calc\n"}]}`,
			Output:      "Applied 2 edits to 2 files.\n\nedits[0]: Replaced 1 occurrence in calc.go.\nedits[1]: Created calc_test.go (13 bytes).",
		}),
	)
}
