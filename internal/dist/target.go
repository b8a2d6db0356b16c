package dist

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Target is one operating system and CPU architecture a release is built
// for, in Go's names (GOOS, GOARCH).
type Target struct {
	OS, Arch string
}

// Targets are the platforms of a release: linux, darwin and windows, each
// on amd64 and arm64.
var Targets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Host is the platform this program runs on.
func Host() Target { return Target{runtime.GOOS, runtime.GOARCH} }

// String returns "os/arch".
func (t Target) String() string { return t.OS + "/" + t.Arch }

// Binary returns the file name of the server's binary on t.
func (t Target) Binary() string {
	if t.OS == "windows" {
		return Name + ".exe"
	}
	return Name
}

// Archive returns the name of t's release archive for version v:
// wink-mcp_<v>_<os>_<arch>.tar.gz, or .zip on windows.
func (t Target) Archive(v string) string {
	ext := ".tar.gz"
	if t.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", Name, v, t.OS, t.Arch, ext)
}

// Bundle returns the name of t's MCP Bundle for version v:
// wink-mcp_<v>_<os>_<arch>.mcpb.
func (t Target) Bundle(v string) string {
	return fmt.Sprintf("%s_%s_%s_%s.mcpb", Name, v, t.OS, t.Arch)
}

// Platform returns t's operating system as an MCP Bundle names it:
// darwin, linux or win32.
func (t Target) Platform() string {
	if t.OS == "windows" {
		return "win32"
	}
	return t.OS
}

// build builds the server of the module at root for t into
// dir/<os>_<arch>/server/ (a bundle's layout), statically linked
// (CGO_ENABLED=0), with -trimpath and main.version set to v, and returns
// the binary's path. goCmd is the go command; its environment
// (GOTOOLCHAIN included) is the process's.
func build(ctx context.Context, goCmd, root string, t Target, v, dir string) (string, error) {
	out := filepath.Join(dir, t.OS+"_"+t.Arch, "server", t.Binary())
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=auto",
		"-ldflags", "-s -w -X main.version="+v, "-o", out, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build for %s: %v: %s", t, err, strings.TrimSpace(string(msg)))
	}
	if err := CheckBinary(out, t); err != nil {
		return "", err
	}
	return out, nil
}

// CheckBinary reads the build information of the binary at path and
// checks that it is a release build for t: built for t's GOOS and GOARCH,
// with CGO_ENABLED=0 and -trimpath. (With -trimpath the go command does
// not record -ldflags; the version is checked by running the host's
// binary with --version.)
func CheckBinary(path string, t Target) error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	got := map[string]string{}
	for _, s := range bi.Settings {
		got[s.Key] = s.Value
	}
	for _, w := range [][2]string{{"GOOS", t.OS}, {"GOARCH", t.Arch}, {"CGO_ENABLED", "0"}, {"-trimpath", "true"}} {
		if got[w[0]] != w[1] {
			return fmt.Errorf("%s: built with %s=%q, want %q", path, w[0], got[w[0]], w[1])
		}
	}
	return nil
}

// checkVersion runs the binary at path with --version and checks that its
// first line says "wink-mcp <v>" (what may follow, such as the store's
// format, is not this check's business).
func checkVersion(ctx context.Context, path, v string) error {
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %v", path, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if f := strings.Fields(line); len(f) < 2 || f[0] != Name || f[1] != v {
		return fmt.Errorf("%s --version printed %q, want %q first", path, line, Name+" "+v)
	}
	return nil
}
