package evaluation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// RunCommandParams are the arguments of run_command.
type RunCommandParams struct {
	Command string `json:"command" jsonschema:"A shell command line, run by /bin/sh -c in /workspace, a copy of the workspace; python3 -c works too where Python is installed."`
}

// CommandRun is the result of run_command.
type CommandRun struct {
	Stdout    string   `json:"stdout" jsonschema:"What the command wrote to stdout."`
	Stderr    string   `json:"stderr" jsonschema:"What the command wrote to stderr."`
	Truncated bool     `json:"truncated,omitempty" jsonschema:"Whether stdout or stderr was cut at the output cap."`
	Changed   []string `json:"changed" jsonschema:"The workspace files the command created, changed or removed, sorted."`
}

// Render shows the output and the changed files.
func (c *CommandRun) Render() string {
	var parts []string
	for _, o := range []struct{ name, text string }{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
		if o.text != "" {
			parts = append(parts, o.name+":\n"+strings.TrimSuffix(o.text, "\n"))
		}
	}
	if c.Truncated {
		parts = append(parts, "[output capped]")
	}
	if len(c.Changed) > 0 {
		parts = append(parts, "Changed: "+strings.Join(c.Changed, ", "))
	}
	if len(parts) == 0 {
		return "(no output, no files changed)"
	}
	return strings.Join(parts, "\n")
}

func runCommandTool(sb *Sandbox) *tools.Tool {
	return tools.New("run_command",
		"Run a shell command in a sandbox (no network) on a copy of the workspace; the files it changes are applied to the workspace if it exits 0, else nothing changes.",
		tools.Annotations{Title: "Run command", Destructive: true},
		func(ctx *tools.Context, p RunCommandParams) (tools.Result[*CommandRun], error) {
			files, err := filesOf(ctx)
			if err != nil {
				return tools.Result[*CommandRun]{}, err
			}
			before, err := files.Snapshot()
			if err != nil {
				return tools.Fail[*CommandRun]("Cannot copy the workspace for the command: " + err.Error()), nil
			}
			tmp, err := os.MkdirTemp("", "wink-run-")
			if err != nil {
				return tools.Result[*CommandRun]{}, err
			}
			defer os.RemoveAll(tmp)
			dir := filepath.Join(tmp, "workspace")
			if err := materialise(dir, before); err != nil {
				return tools.Result[*CommandRun]{}, err
			}
			if err := sb.own(tmp); err != nil {
				return tools.Result[*CommandRun]{}, err
			}
			cmd := sb.command(ctx, dir, p.Command, files.MaxFileBytes())
			stdout, stderr := &head{max: sb.maxOutput}, &head{max: sb.maxOutput}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			runErr := cmd.Run()
			out := &CommandRun{Stdout: stdout.String(), Stderr: stderr.String(), Truncated: stdout.cut || stderr.cut, Changed: []string{}}
			var exit *exec.ExitError
			switch {
			case ctx.Err() != nil:
				return tools.Fail[*CommandRun]("The command was stopped: the call's deadline passed. No file was changed.\n" + out.Render()), nil
			case errors.As(runErr, &exit):
				return tools.Fail[*CommandRun](fmt.Sprintf("The command failed (%s). No file was changed.\n%s", describeExit(exit), out.Render())), nil
			case runErr != nil:
				return tools.Result[*CommandRun]{}, fmt.Errorf("running the sandbox: %w", runErr)
			}
			if out.Changed, err = apply(files, dir, before); err != nil {
				return tools.Fail[*CommandRun](fmt.Sprintf("The command succeeded, but its changes cannot be applied: %v No file was changed.\n%s", err, out.Render())), nil
			}
			return tools.OK(fmt.Sprintf("The command exited 0; changed %s.", plural(len(out.Changed), "file", "files")), out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Run a Python one-liner that writes a file.",
			Input:       `{"command":"python3 -c 'open(\"out.txt\", \"w\").write(\"hi\\n\")' && cat out.txt"}`,
			Output:      "The command exited 0; changed 1 file.\n\nstdout:\nhi\nChanged: out.txt",
		}),
	)
}

// describeExit says how a command ended: its status, or, for a process
// killed by a signal (the shell and bwrap report it as status 128+n), the
// signal and what it usually means here.
func describeExit(e *exec.ExitError) string {
	code := e.ExitCode()
	if code <= 128 || code > 128+64 {
		return e.Error()
	}
	sig := syscall.Signal(code - 128)
	return fmt.Sprintf("killed by signal %d, %v", code-128, sig) + signalMeaning(sig)
}

// materialise writes files (path to content) under dir.
func materialise(dir string, files map[string][]byte) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// apply makes the workspace hold what the command left in dir, compared
// with before: each file it created or changed is written, each file of
// before it removed is removed, through files. It reads dir through an
// os.Root, and refuses what is not a regular file or a directory, so
// that no symbolic link the command left brings in a host file. It
// returns the paths it changed, sorted.
func apply(files *workspace.Files, dir string, before map[string][]byte) ([]string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	after := map[string][]byte{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("the command left %s, which is not a regular file (a link, pipe or socket); the workspace holds regular files only.", p)
		}
		f, err := root.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		after[p] = data
		return err
	})
	if err != nil {
		return nil, err
	}
	var changed []string
	for p, data := range after {
		if old, ok := before[p]; ok && bytes.Equal(old, data) {
			continue
		}
		if _, err := files.Write(p, string(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		changed = append(changed, p)
	}
	for p := range before {
		if _, ok := after[p]; ok {
			continue
		}
		if _, err := files.Remove(p); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		changed = append(changed, p)
	}
	slices.Sort(changed)
	return changed, nil
}
