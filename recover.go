package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/wink-mcp/wink-mcp/config"
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
	stateDir := fs.String("state-dir", "", "the state `directory` (default: the configuration's, else $XDG_STATE_HOME/wink-mcp or ~/.local/state/wink-mcp)")
	cfgFile := fs.String("config", "", "configuration `file` (YAML), for its state_dir")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wink-mcp recover [--state-dir DIR] [--config FILE]")
		fmt.Fprintln(stderr, "Puts back the files of disk workspaces that calls of a dead process left half changed.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wink-mcp recover: unexpected arguments %q\n", fs.Args())
		return 2
	}
	dir, err := recoverDir(*stateDir, *cfgFile)
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

// recoverDir returns the state directory: the flag's, else the
// configuration file's, else the default.
func recoverDir(flagDir, cfgFile string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	cfg := config.Default()
	if cfgFile != "" {
		var err error
		if cfg, err = config.Load(cfgFile); err != nil {
			return "", err
		}
	}
	return cfg.StateDirectory()
}
