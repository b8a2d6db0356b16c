// Command dist makes a release of wink-mcp in OUTDIR (package dist);
// scripts/dist runs it after govulncheck.
//
// Usage:
//
//	dist [-check] [-mcpb CLI.js] [-targets os/arch,...] VERSION OUTDIR
//
// -check only checks VERSION and OUTDIR. -mcpb names the official mcpb
// CLI's cli.js, run with node, to validate every bundle. -targets builds
// fewer platforms than the six of a release. The time of the files in the
// archives is SOURCE_DATE_EPOCH, else the time of the checkout's HEAD
// commit, so that a release can be made again byte for byte.
//
// A refusal is one line on stderr and exit status 2; a failed release
// exits 1 and leaves OUTDIR as it was.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/dist"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	check := fs.Bool("check", false, "only check VERSION and OUTDIR")
	mcpb := fs.String("mcpb", "", "the mcpb CLI's cli.js, run with node, to validate the bundles")
	targets := fs.String("targets", "", "comma-separated os/arch to build (default: the six of a release)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "dist: %v; usage: scripts/dist VERSION OUTDIR\n", err)
		return 2
	}
	refuse := func(err error) int {
		fmt.Fprintf(stderr, "dist: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 2
	}
	if fs.NArg() > 2 {
		return refuse(fmt.Errorf("unexpected argument %q; usage: scripts/dist VERSION OUTDIR", fs.Arg(2)))
	}
	version, outDir := fs.Arg(0), fs.Arg(1)
	if _, err := dist.Check(version, outDir); err != nil {
		return refuse(err)
	}
	o := dist.Options{Version: version, OutDir: outDir, Log: stderr, ModTime: modTime()}
	if *targets != "" {
		for _, s := range strings.Split(*targets, ",") {
			osName, arch, ok := strings.Cut(s, "/")
			if !ok {
				return refuse(fmt.Errorf("-targets: %q is not os/arch", s))
			}
			o.Targets = append(o.Targets, dist.Target{OS: osName, Arch: arch})
		}
	}
	if *mcpb != "" {
		o.MCPB = []string{"node", *mcpb}
	}
	if *check {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := dist.Release(ctx, o); err != nil {
		fmt.Fprintf(stderr, "dist: %v\nNothing was written to %s.\n", err, outDir)
		return 1
	}
	return 0
}

// modTime returns SOURCE_DATE_EPOCH, else the time of HEAD's commit, else
// now.
func modTime() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	if out, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC()
}
