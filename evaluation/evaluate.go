package evaluation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// EvaluateParams are the arguments of evaluate.
type EvaluateParams struct {
	Code string `json:"code" jsonschema:"A Starlark snippet (a dialect of Python without import, class, try or f-strings). fs.read/write/ls/glob/grep and json are available; the last line's value is returned."`
}

// Evaluation is the result of evaluate.
type Evaluation struct {
	Value     any      `json:"value,omitempty" jsonschema:"The value of the snippet's last line, when it is an expression that is not None, as JSON."`
	Output    string   `json:"output" jsonschema:"What the snippet printed."`
	Truncated bool     `json:"truncated,omitempty" jsonschema:"Whether the printed output was cut at the output cap."`
	Changed   []string `json:"changed" jsonschema:"The files the snippet wrote, in the order it first wrote them."`
}

// Render shows the printed output, the value and the changed files.
func (e *Evaluation) Render() string {
	var parts []string
	if e.Output != "" {
		out := "Output:\n" + strings.TrimSuffix(e.Output, "\n")
		if e.Truncated {
			out += "\n[output capped]"
		}
		parts = append(parts, out)
	}
	if e.Value != nil {
		b, _ := json.Marshal(e.Value)
		parts = append(parts, "Value: "+string(b))
	}
	if len(e.Changed) > 0 {
		parts = append(parts, "Changed: "+strings.Join(e.Changed, ", "))
	}
	if len(parts) == 0 {
		return "(no output, no value, no files changed)"
	}
	return strings.Join(parts, "\n")
}

// recorder is a fileSystem that remembers which files were written.
type recorder struct {
	*workspace.Files
	changed []string
}

// Write writes through, and records the path when the write succeeded.
func (r *recorder) Write(path, content string) (string, error) {
	msg, err := r.Files.Write(path, content)
	if err == nil {
		if p, nerr := workspace.Normalize(path); nerr == nil && !slices.Contains(r.changed, p) {
			r.changed = append(r.changed, p)
		}
	}
	return msg, err
}

func evaluateTool(opts Options) *tools.Tool {
	lim := limits{Steps: opts.MaxSteps, Output: opts.MaxOutputBytes}
	return tools.New("evaluate",
		"Run a Starlark snippet against the workspace (fs.read, fs.write, fs.ls, fs.glob, fs.grep; json). All or nothing: if it fails, its writes are undone.",
		tools.Annotations{Title: "Evaluate Starlark", Destructive: true},
		func(ctx *tools.Context, p EvaluateParams) (tools.Result[*Evaluation], error) {
			files, err := filesOf(ctx)
			if err != nil {
				return tools.Result[*Evaluation]{}, err
			}
			rec := &recorder{Files: files}
			var r *run
			if opts.Child {
				if r, err = evaluateInChild(ctx, p.Code, rec, lim, opts.MaxMemoryBytes); err != nil {
					return tools.Result[*Evaluation]{}, err
				}
			} else {
				r = evaluate(ctx, p.Code, rec, lim)
			}
			if r.Error != "" {
				msg := r.Error + "\nNo file was changed."
				if r.Output != "" {
					msg += "\nOutput before the error:\n" + strings.TrimSuffix(r.Output, "\n")
				}
				return tools.Fail[*Evaluation](msg), nil
			}
			out := &Evaluation{Output: r.Output, Truncated: r.Truncated, Changed: rec.changed}
			if out.Changed == nil {
				out.Changed = []string{}
			}
			if len(r.Value) > 0 {
				dec := json.NewDecoder(strings.NewReader(string(r.Value)))
				dec.UseNumber()
				if err := dec.Decode(&out.Value); err != nil {
					return tools.Result[*Evaluation]{}, fmt.Errorf("decoding the snippet's value: %w", err)
				}
			}
			return tools.OK(fmt.Sprintf("Evaluated in %d steps; changed %s.", r.Steps, plural(len(out.Changed), "file", "files")), out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Count the lines of every Go file.",
			Input:       `{"code":"counts = {}\nfor p in fs.glob(\"**/*.go\"):\n    counts[p] = len(fs.read(p).splitlines())\ncounts"}`,
			Output:      "Evaluated in 32 steps; changed 0 files.\n\nValue: {\"main.go\":12}",
		}, tools.Example{
			Description: "Bump the version in package.json.",
			Input:       `{"code":"cfg = json.decode(fs.read(\"package.json\"))\ncfg[\"version\"] = \"1.1.0\"\nfs.write(\"package.json\", json.indent(json.encode(cfg)))\nprint(\"now\", cfg[\"version\"])"}`,
			Output:      "Evaluated in 35 steps; changed 1 file.\n\nOutput:\nnow 1.1.0\nChanged: package.json",
		}),
	)
}

// plural returns "1 file", "2 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
