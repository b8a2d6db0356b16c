// Package dist makes a release of wink-mcp from a checkout: for every
// platform of Targets a release archive (the binary, README.md and
// LICENSE) and an MCP Bundle (.mcpb, manifest 0.3, server type binary)
// for Claude Desktop, then a server.json for the MCP Registry naming each
// bundle by its download URL and SHA-256, and a checksums.txt over the
// archives and bundles. scripts/dist runs it after govulncheck, with the
// pinned Go toolchain and the official mcpb CLI.
//
// A release is all or nothing: the files are made in a folder beside
// OUTDIR, which is renamed to OUTDIR once every file is made and checked;
// a failure removes it, so a failed build leaves no partial archive.
//
// There is one bundle per platform, not one for all: a manifest has no key
// for the CPU architecture, so a single bundle would need a launcher
// script that picks the binary, and would carry six binaries to every
// user. A bundle's tools are those the built server lists: the release
// starts the binary of the host's platform as Claude Desktop would start
// the bundle, and asks it for tools/list.
package dist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Options say what to release, where, and with what.
type Options struct {
	// Version is the release's version, "v1.2.3" or "1.2.3".
	Version string
	// OutDir is where the release goes: a folder that does not exist yet,
	// or an empty one. Its parent must exist.
	OutDir string
	// Root is the checkout to build (default: the current directory).
	Root string
	// Targets are the platforms to build for (default: Targets).
	Targets []Target
	// Go is the go command (default: "go"); it runs with the process's
	// environment, GOTOOLCHAIN included.
	Go string
	// MCPB is the command that runs the official mcpb CLI, such as
	// ["node", ".tools/mcpb/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"].
	// With it every bundle is unpacked, validated and described by that
	// CLI before the release is kept; without it that check is skipped.
	MCPB []string
	// ModTime is the time of every file in the archives (default: now).
	ModTime time.Time
	// Log receives a line per step (default: nowhere).
	Log io.Writer
}

// Check checks a release's version and output folder before anything is
// built, and returns the version without its leading "v". It writes
// nothing.
func Check(version, outDir string) (string, error) {
	v, err := ParseVersion(version)
	if err != nil {
		return "", err
	}
	if outDir == "" {
		return "", fmt.Errorf("no OUTDIR given; usage: scripts/dist VERSION OUTDIR")
	}
	st, err := os.Stat(outDir)
	switch {
	case os.IsNotExist(err):
		if _, err := os.Stat(filepath.Dir(filepath.Clean(outDir))); err != nil {
			return "", fmt.Errorf("OUTDIR %s: its parent folder does not exist", outDir)
		}
		return v, nil
	case err != nil:
		return "", fmt.Errorf("OUTDIR %s: %v", outDir, err)
	case !st.IsDir():
		return "", fmt.Errorf("OUTDIR %s is a file, not a folder", outDir)
	}
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return "", fmt.Errorf("OUTDIR %s: %v", outDir, err)
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("OUTDIR %s holds files (%s, ...); give a new or empty folder", outDir, entries[0].Name())
	}
	return v, nil
}

// Release makes the release o describes in o.OutDir, or leaves o.OutDir
// as it was and returns why not.
func Release(ctx context.Context, o Options) error {
	v, err := Check(o.Version, o.OutDir)
	if err != nil {
		return err
	}
	if o.Root == "" {
		o.Root = "."
	}
	if o.Targets == nil {
		o.Targets = Targets
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.ModTime.IsZero() {
		o.ModTime = time.Now()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	readme, err := os.ReadFile(filepath.Join(o.Root, "README.md"))
	if err != nil {
		return err
	}
	license, err := os.ReadFile(filepath.Join(o.Root, "LICENSE"))
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.OutDir)
	if err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage) // gone after the rename; left by a failure
	work, err := os.MkdirTemp("", "wink-dist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// The host's binary comes first: its tools/list is every bundle's
	// tools.
	order := slices.Clone(o.Targets)
	host := Host()
	var tools []Tool
	if i := slices.Index(order, host); i >= 0 {
		order = append(append([]Target{host}, order[:i]...), order[i+1:]...)
	} else {
		fmt.Fprintf(o.Log, "building %s to list its tools\n", host)
		bin, err := build(ctx, o.Go, o.Root, host, v, filepath.Join(work, "host"))
		if err != nil {
			return err
		}
		if tools, err = listTools(ctx, bin, v, work); err != nil {
			return err
		}
	}
	var files []string
	for _, t := range order {
		fmt.Fprintf(o.Log, "building %s\n", t)
		bin, err := build(ctx, o.Go, o.Root, t, v, work)
		if err != nil {
			return err
		}
		if t == host {
			if tools, err = listTools(ctx, bin, v, work); err != nil {
				return err
			}
			fmt.Fprintf(o.Log, "the server lists %d tools\n", len(tools))
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		docs := []entry{{"README.md", 0o644, readme}, {"LICENSE", 0o644, license}}
		archive := t.Archive(v)
		if err := writeArchive(filepath.Join(stage, archive), o.ModTime,
			append([]entry{{t.Binary(), 0o755, binary}}, docs...)); err != nil {
			return fmt.Errorf("%s: %v", archive, err)
		}
		m, err := templateManifest(v, t, tools)
		if err != nil {
			return err
		}
		manifest, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		bundle := t.Bundle(v)
		if err := writeArchive(filepath.Join(stage, bundle), o.ModTime,
			append([]entry{{"manifest.json", 0o644, append(manifest, '\n')}, {m.Server.EntryPoint, 0o755, binary}}, docs...)); err != nil {
			return fmt.Errorf("%s: %v", bundle, err)
		}
		if len(o.MCPB) > 0 {
			if err := validateBundle(ctx, o.MCPB, filepath.Join(stage, bundle), m, filepath.Join(work, "mcpb-"+t.OS+"_"+t.Arch), o.Log); err != nil {
				return err
			}
		}
		files = append(files, archive, bundle)
		fmt.Fprintf(o.Log, "made %s and %s\n", archive, bundle)
	}

	sums := map[string]string{}
	var checksums bytes.Buffer
	slices.Sort(files)
	for _, f := range files {
		sum, err := sha256File(filepath.Join(stage, f))
		if err != nil {
			return err
		}
		sums[f] = sum
		fmt.Fprintf(&checksums, "%s  %s\n", sum, f)
	}
	if err := os.WriteFile(filepath.Join(stage, "checksums.txt"), checksums.Bytes(), 0o644); err != nil {
		return err
	}
	var bundles []string
	for _, t := range o.Targets {
		bundles = append(bundles, t.Bundle(v))
	}
	sj, err := json.MarshalIndent(serverJSON(v, bundles, sums), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "server.json"), append(sj, '\n'), 0o644); err != nil {
		return err
	}

	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("OUTDIR %s: %v", o.OutDir, err) // not empty any more
	}
	if err := os.Rename(stage, out); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "released %s in %s\n", v, o.OutDir)
	return nil
}

// listTools checks that the binary at bin prints version v, starts it as
// Claude Desktop starts the bundle (a fresh folder picked, the other
// options at their defaults, a home of its own so that nothing of the
// releaser's is read or written) and returns the tools it lists.
func listTools(ctx context.Context, bin, v, work string) ([]Tool, error) {
	if err := checkVersion(ctx, bin, v); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(work, "tools-")
	if err != nil {
		return nil, err
	}
	home, folder := filepath.Join(dir, "home"), filepath.Join(dir, "folder")
	for _, d := range []string{home, folder} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	m, err := templateManifest(v, Host(), nil)
	if err != nil {
		return nil, err
	}
	// The bundle's layout: the binary at ${__dirname}/server/.
	if filepath.Base(filepath.Dir(bin)) != "server" {
		return nil, fmt.Errorf("%s is not in a server/ folder", bin)
	}
	command, args, env, err := m.Command(filepath.Dir(filepath.Dir(bin)), home, map[string]string{"workspace": folder})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = HostEnv(home, env)
	c, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		return nil, err
	}
	tools, err := c.Tools(ctx)
	if cerr := c.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && len(tools) == 0 {
		err = fmt.Errorf("%s lists no tools", bin)
	}
	return tools, err
}

// HostEnv returns the environment a desktop host gives a bundle's server:
// this process's, with HOME (and USERPROFILE) set to home, the
// XDG_STATE_HOME of this process left out (so the server keeps its state
// under home), and the manifest's env added.
func HostEnv(home string, env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "USERPROFILE" || k == "XDG_STATE_HOME" {
			continue
		}
		if _, ok := env[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "HOME="+home, "USERPROFILE="+home)
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// validateBundle runs the official mcpb CLI (mcpb) on the bundle at path:
// unpack (its unpacker, which keeps Unix modes as Claude Desktop does)
// into dir, validate the manifest it unpacked, and info; on a Unix
// platform the entry point must come out executable.
func validateBundle(ctx context.Context, mcpb []string, path string, m *Manifest, dir string, log io.Writer) error {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, mcpb[0], append(slices.Clone(mcpb[1:]), args...)...)
		msg, err := cmd.CombinedOutput()
		fmt.Fprintf(log, "mcpb %s: %s\n", args[0], strings.Join(strings.Fields(string(msg)), " "))
		if err != nil {
			return fmt.Errorf("mcpb %s %s: %v: %s", args[0], filepath.Base(path), err, strings.TrimSpace(string(msg)))
		}
		return nil
	}
	if err := run("unpack", path, dir); err != nil {
		return err
	}
	if err := run("validate", dir); err != nil {
		return err
	}
	if err := run("info", path); err != nil {
		return err
	}
	if Host().OS != "windows" && !strings.HasSuffix(m.Server.EntryPoint, ".exe") {
		st, err := os.Stat(filepath.Join(dir, m.Server.EntryPoint))
		if err != nil {
			return fmt.Errorf("%s: the entry point: %v", filepath.Base(path), err)
		}
		if st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s: mcpb unpack gave the entry point mode %v, not executable", filepath.Base(path), st.Mode().Perm())
		}
	}
	return nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
