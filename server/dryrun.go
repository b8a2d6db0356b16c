package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/diffs"
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
	o.Content = append(slices.Clone(o.Content), mcp.NewTextContent(d.Text("The call would make these changes:", "The call would change nothing.")))
	o.Meta = maps.Clone(o.Meta)
	if o.Meta == nil {
		o.Meta = map[string]any{}
	}
	o.Meta[tools.MetaDryRun] = d
	return &o
}

// diffOf returns what changed in s since tx began: nothing for a read-only
// call's transaction.
func diffOf(s *session.Session, tx *session.Tx) (diffs.Diff, error) {
	d := diffs.New()
	before, after := tx.Before(), s.Slices()
	if before == nil {
		return d, nil
	}
	changed, err := s.ChangedSlices(before, after)
	if err != nil {
		return d, err
	}
	for _, c := range changed {
		d.AddSlice(c.Name, c.Before, c.After)
	}
	changes, err := tx.Changes()
	if err != nil {
		return d, err
	}
	for _, c := range changes {
		if !c.Dir { // a directory's files say what changed
			d.AddFile(c.Path, c.Existed, c.Exists, c.Before, c.After)
		}
	}
	return d, nil
}
