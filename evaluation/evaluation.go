// Package evaluation is the evaluation section: it runs code the model
// writes against the session's workspace, inside the call's transaction,
// so that a failed run leaves nothing behind.
//
// # evaluate: Starlark
//
// The tool evaluate runs a Starlark snippet (go.starlark.net). The snippet
// reaches the workspace only through the fs builtins (fs.read, fs.write,
// fs.ls, fs.glob, fs.grep), bound to the call and going through the
// workspace's own API (workspace.Files): the workspace tools' paths,
// limits, ignore rules and policies apply, read-before-write included, and
// the writes are changes of the call's transaction, undone when the
// snippet fails. The json module is there too; there is no other access
// to the host: no files, no network, no clock. A snippet is bounded by a
// step budget, by the call's deadline (which cancels the interpreter) and
// by a cap on what print writes. Its result is the value of its last line
// when that line is an expression, what it printed, and the files it
// changed.
//
// The interpreter has no cap on memory. With Options.Child, each snippet
// runs in a child process of the server's own binary (IsChild, Child),
// whose address space may grow by at most Options.MaxMemoryBytes past
// what it has mapped when it starts (RLIMIT_AS, set on the child with
// prlimit before it is given the snippet; Linux only). Its fs builtins ask
// the parent over a pipe, and the parent does each read and write in the
// call's transaction, so both modes behave the same; a child that runs out
// of memory or time is killed, and its writes are undone with the call.
//
// # run_command: bubblewrap
//
// The tool run_command, off unless Options.RunCommand is set, runs a shell
// command under bubblewrap on Linux (Sandbox says what it isolates). New
// checks at startup that a sandbox can be made, and fails saying why when
// it cannot: a command never runs unsandboxed. The files the workspace
// tools see are copied into a temporary directory, the command's
// /workspace, whichever the backend; afterwards each file it created,
// changed or removed there is written or removed through
// workspace.Files, in the call's transaction and under the same policies
// (read-before-write included). A command that exits non-zero, times out
// or is cancelled changes nothing.
package evaluation

import (
	_ "embed"
	"errors"
	"runtime"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Key is the section's key.
const Key = "evaluation"

// Defaults of Options.
const (
	// DefaultMaxSteps is the step budget of a snippet.
	DefaultMaxSteps = 10_000_000
	// DefaultMaxOutputBytes caps what a snippet prints, or what a command
	// writes to stdout and to stderr, each.
	DefaultMaxOutputBytes = 64 << 10
	// DefaultMaxMemoryBytes is how much a child process's address space
	// may grow past what it has mapped when it starts.
	DefaultMaxMemoryBytes = 256 << 20
)

// Options tunes the section. The zero value is the default.
type Options struct {
	// Child runs every snippet in a child process under an address-space
	// limit: for callers that are not trusted.
	Child bool
	// MaxSteps is a snippet's step budget; DefaultMaxSteps when zero.
	MaxSteps uint64
	// MaxOutputBytes caps printed output; DefaultMaxOutputBytes when zero.
	MaxOutputBytes int
	// MaxMemoryBytes is a child's address-space allowance;
	// DefaultMaxMemoryBytes when zero.
	MaxMemoryBytes int64
	// RunCommand turns run_command on, with these limits; nil leaves it
	// off.
	RunCommand *Sandbox
}

//go:embed guidance.md
var guidance string

// New returns the section, or an error when child processes are asked for
// off Linux, or run_command where bubblewrap cannot run (the error says
// why). The workspace section must be on too: the tools work on its files.
func New(opts Options) (*sections.Section, error) {
	if opts.Child && runtime.GOOS != "linux" {
		return nil, errors.New("evaluation: snippets of untrusted callers (HTTP, evaluation.isolate) run in child processes with a memory limit, which needs Linux")
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxMemoryBytes <= 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	ts := []*tools.Tool{evaluateTool(opts)}
	if opts.RunCommand != nil {
		sb := *opts.RunCommand
		sb.defaults(opts.MaxOutputBytes)
		if err := sb.Check(); err != nil {
			return nil, err
		}
		ts = append(ts, runCommandTool(&sb))
	}
	return &sections.Section{
		Key:      Key,
		Title:    "Evaluation",
		Guidance: guidance,
		Data: map[string]any{
			"MaxSteps":   opts.MaxSteps,
			"RunCommand": opts.RunCommand != nil,
		},
		Tools: ts,
	}, nil
}

// errNoWorkspace is the error of a call in a server without the workspace
// section.
var errNoWorkspace = errors.New("the evaluation section needs the workspace section: add workspace to sections")

// filesOf returns the workspace of the call of ctx.
func filesOf(ctx *tools.Context) (*workspace.Files, error) {
	if workspace.From(ctx.Session) == nil {
		return nil, errNoWorkspace
	}
	return workspace.CallFiles(ctx)
}
