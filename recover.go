package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// runRecover is the command "wink-mcp recover [--state-dir DIR] [--config
// FILE]": it puts back, in every disk workspace whose locks and journals
// the state directory keeps, the calls that dead processes left in flight
// (a process on the workspace does the same as it starts, and every
// second while it runs), says what it did on stdout, and returns the exit
// status: 1 if a workspace could not be repaired.
func runRecover(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wink-mcp recover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f flags
	fs.StringVar(&f.stateDir, "state-dir", "", "the state `directory` (default: the configuration's, else $XDG_STATE_HOME/wink-mcp or ~/.local/state/wink-mcp)")
	fs.StringVar(&f.config, "config", "", "configuration `file` (YAML), for its state_dir")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wink-mcp recover [--state-dir DIR] [--config FILE]")
		fmt.Fprintln(stderr, "Puts back the files of disk workspaces that calls of a dead process left half changed.")
		fs.PrintDefaults()
	}
	if code, ok := parseCommand(fs, args, stderr); !ok {
		return code
	}
	dir, err := stateDirectory(&f)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp recover: %v\n", err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	done, err := workspace.Recover(dir, logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp recover: %v\n", err)
		return 1
	}
	if len(done) == 0 {
		fmt.Fprintf(stdout, "No disk workspace keeps its journals in %s: nothing to put back.\n", dir)
		return 0
	}
	code := 0
	for _, r := range done {
		switch {
		case r.Err != nil:
			fmt.Fprintf(stdout, "%s: not repaired: %v\n", r.Root, r.Err)
			code = 1
		case r.Calls == 0:
			fmt.Fprintf(stdout, "%s: nothing to put back\n", r.Root)
		default:
			fmt.Fprintf(stdout, "%s: put back %d call(s) a dead process left in flight\n", r.Root, r.Calls)
		}
	}
	return code
}
