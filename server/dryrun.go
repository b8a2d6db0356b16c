package server

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// DryRunNote starts the message of a dry run's result.
const DryRunNote = "Dry run: nothing was changed."

// metaDryRun reads tools.MetaDryRun from the request's _meta: a boolean, or
// absent.
func metaDryRun(meta map[string]any) (bool, error) {
	v, ok := meta[tools.MetaDryRun]
	if !ok {
		return false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("%s: expected true or false, got %s", tools.MetaDryRun, jsonText(v))
	}
	return b, nil
}

// errDryRun makes Tx.Apply undo what the commit hooks of a dry run did.
var errDryRun = errors.New("dry run")

// dryRun returns the outcome of a dry run that succeeded, out, in the
// transaction tx that the transaction stage restores: the policies'
// OnResult run (and may still refuse the call), and undone with the rest,
// and the outcome says that it was a dry run and carries what the call
// would have changed, the Diff of the session's state slices and files,
// as an extra text block and in its _meta under tools.MetaDryRun.
func dryRun(call *tools.Call, tx *session.Tx, out *tools.Outcome) *tools.Outcome {
	d, err := diffOf(call.Session, tx)
	if err != nil {
		return failed(call, tools.ClassError, fmt.Errorf("describing the dry run's changes: %w", err))
	}
	_ = tx.Apply(func() error {
		if err := call.RunCommitHooks(out); err != nil {
			out = failed(call, tools.ClassOf(err, tools.ClassError), err)
		}
		return errDryRun
	})
	if !out.Success {
		return out
	}
	o := *out
	o.Message = DryRunNote + " " + o.Message
	if o.Message == DryRunNote+" " {
		o.Message = DryRunNote
	}
	o.Content = append(slices.Clone(o.Content), mcp.NewTextContent(d.Text()))
	o.Meta = maps.Clone(o.Meta)
	if o.Meta == nil {
		o.Meta = map[string]any{}
	}
	o.Meta[tools.MetaDryRun] = d
	return &o
}

// Diff is what a call would have changed: each STATE slice whose value
// differs, as a unified diff of its JSON, and each file.
type Diff struct {
	State []SliceDiff `json:"state"`
	Files []FileDiff  `json:"files"`
}

// SliceDiff is the change of one STATE slice.
type SliceDiff struct {
	Slice string `json:"slice"`
	Diff  string `json:"diff"`
}

// FileDiff is the change of one file: "added", "removed" or "modified",
// with a unified diff of its text (empty for a binary file).
type FileDiff struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

// Text is the diff for the model: every slice's, then every file's.
func (d Diff) Text() string {
	if len(d.State) == 0 && len(d.Files) == 0 {
		return "The call would change nothing."
	}
	var b strings.Builder
	b.WriteString("The call would make these changes:\n")
	for _, s := range d.State {
		fmt.Fprintf(&b, "\nState %s:\n%s", s.Slice, s.Diff)
	}
	for _, f := range d.Files {
		if f.Diff == "" {
			fmt.Fprintf(&b, "\nBinary file %s %s\n", f.Path, f.Status)
			continue
		}
		b.WriteString("\n" + f.Diff)
	}
	return b.String()
}

// diffOf returns what changed in s since tx began: nothing for a read-only
// call's transaction.
func diffOf(s *session.Session, tx *session.Tx) (Diff, error) {
	d := Diff{State: []SliceDiff{}, Files: []FileDiff{}}
	before, after := tx.Before(), s.Slices()
	if before == nil {
		return d, nil
	}
	changed, err := s.ChangedSlices(before, after)
	if err != nil {
		return d, err
	}
	for _, c := range changed {
		d.State = append(d.State, SliceDiff{Slice: c.Name, Diff: unified(c.Name, c.Name, c.Before, c.After)})
	}
	changes, err := tx.Changes()
	if err != nil {
		return d, err
	}
	for _, c := range changes {
		if c.Dir {
			continue // its files say what changed
		}
		f := FileDiff{Path: c.Path, Status: "modified"}
		from, to := "a/"+c.Path, "b/"+c.Path
		switch {
		case !c.Existed:
			f.Status, from = "added", "/dev/null"
		case !c.Exists:
			f.Status, to = "removed", "/dev/null"
		}
		if text(c.Before) && text(c.After) {
			f.Diff = unified(from, to, string(c.Before), string(c.After))
		}
		d.Files = append(d.Files, f)
	}
	return d, nil
}

// text reports whether data is text a line diff can show.
func text(data []byte) bool { return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 }

// unified is the unified diff from a to b, with three lines of context.
func unified(from, to, a, b string) string {
	s, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: from, ToFile: to, Context: 3,
	})
	return s
}

// lines splits s into lines that keep their newline; a last line without
// one gets one.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		return out[:len(out)-1]
	}
	out[len(out)-1] += "\n"
	return out
}
