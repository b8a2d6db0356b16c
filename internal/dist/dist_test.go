package dist

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// root is the checkout the tests build: this package is internal/dist.
const root = "../.."

// schemaSHA256 pins testdata/server.schema.json, a copy of ServerSchema
// as published (2025-12-11): moving to another schema is a deliberate
// change of both.
const schemaSHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"v1.2.3", "1.2.3", ""},
		{"1.2.3", "1.2.3", ""},
		{"v0.1.0", "0.1.0", ""},
		{"v1.3.0-rc.1", "1.3.0-rc.1", ""},
		{"v2.0.0-alpha.beta-1.0", "2.0.0-alpha.beta-1.0", ""},
		{"", "", "no VERSION given"},
		{"v1.2", "", "is not semver"},
		{"1", "", "is not semver"},
		{"v01.2.3", "", "is not semver"},
		{"v1.2.3-01", "", "is not semver"},
		{"v1.2.3+build.5", "", "is not semver"},
		{"vv1.2.3", "", "is not semver"},
		{"latest", "", "is not semver"},
		{"v1.2.3/../x", "", "is not semver"},
	} {
		got, err := ParseVersion(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseVersion(%q) = %q, %v; want %q, an error with %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestScriptRefuses runs scripts/dist with bad command lines: each gets one
// line on stderr, nothing on stdout, a non-zero exit, and nothing is
// written next to OUTDIR or in it.
func TestScriptRefuses(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "old.tar.gz"), []byte("an earlier release"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no VERSION given"},
		{[]string{"1.2"}, `VERSION "1.2" is not semver`},
		{[]string{"version-one", filepath.Join(dir, "new")}, `VERSION "version-one" is not semver`},
		{[]string{"v1.2.3"}, "no OUTDIR given"},
		{[]string{"v1.2.3", full}, "holds files (old.tar.gz, ...)"},
		{[]string{"v1.2.3", file}, "is a file, not a folder"},
		{[]string{"v1.2.3", filepath.Join(dir, "no", "such")}, "its parent folder does not exist"},
		{[]string{"v1.2.3", empty, "extra"}, `unexpected argument "extra"`},
	} {
		cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "dist")}, tc.args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("scripts/dist %q: %v, want a non-zero exit", tc.args, err)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.want) || stdout.Len() > 0 {
			t.Errorf("scripts/dist %q: stdout %q, stderr %q; want one line on stderr with %q", tc.args, stdout.String(), stderr.String(), tc.want)
		}
	}
	if after := listTree(t, dir); !slices.Equal(before, after) {
		t.Errorf("scripts/dist wrote files: before %q, after %q", before, after)
	}
}

// TestBundleInstalledAsClaudeDesktop makes the release of this platform
// only, with the release command, checks every file of it, then installs its bundle as Claude
// Desktop does: unpack it into a folder whose path has a space, substitute
// ${__dirname}, ${HOME} and ${user_config.*} (the folder the user picked)
// in mcp_config, start that command, and speak MCP to it: initialize,
// tools/list (the manifest lists the same tools), and a write_file that
// must land in the picked folder. With .tools/mcpb installed
// (scripts/mcpb.sh) the release also passes mcpb unpack, validate and
// info; WINK_DIST_REQUIRE_MCPB=1 makes that required.
func TestBundleInstalledAsClaudeDesktop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	host := Host()
	if !slices.Contains(Targets, host) {
		t.Skipf("%s is not a platform of a release", host)
	}
	const v = "0.0.0-test.1"
	out := filepath.Join(t.TempDir(), "release")
	if err := os.Mkdir(out, 0o755); err != nil { // an empty OUTDIR is fine
		t.Fatal(err)
	}
	args := []string{"-targets", host.String()}
	if cli := mcpbCLI(t); cli != nil {
		args = append(args, "-mcpb", cli[1])
	}
	log, err := runDist(t, append(args, "v"+v, out)...)
	if err != nil {
		t.Fatalf("dist: %v\n%s", err, log)
	}
	t.Logf("dist:\n%s", log)
	checkRelease(t, out, v, []Target{host})

	// Install the bundle as Claude Desktop does.
	base := t.TempDir()
	installed := filepath.Join(base, "Claude Extensions", "wink-mcp")
	m, err := Unpack(filepath.Join(out, host.Bundle(v)), installed)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	picked := filepath.Join(base, "My Project")
	for _, d := range []string{home, picked} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	command, args, env, err := m.Command(installed, home, map[string]string{"workspace": picked})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--workspace", picked, "--session", "claude-desktop", "--log-level", "info"}
	if command != filepath.Join(installed, "server", host.Binary()) || !slices.Equal(args, wantArgs) {
		t.Fatalf("mcp_config gives %q %q, want %q %q", command, args, filepath.Join(installed, "server", host.Binary()), wantArgs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = HostEnv(home, env)
	c, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name, Version string
		} `json:"serverInfo"`
		Capabilities map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(init, &ir); err != nil {
		t.Fatal(err)
	}
	if ir.ProtocolVersion != "2025-06-18" || ir.ServerInfo.Version != v || ir.Capabilities["tools"] == nil {
		t.Errorf("initialize answered %s; want protocol 2025-06-18, version %s, tools", init, v)
	}
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(toolNames(tools), toolNames(m.Tools)) {
		t.Errorf("the server lists %q; the manifest %q", toolNames(tools), toolNames(m.Tools))
	}
	res, err := c.Call(ctx, "tools/call", map[string]any{
		"name":      "write_file",
		"arguments": map[string]any{"file_path": "notes/hello.txt", "content": "written through the bundle\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var call struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &call); err != nil || call.IsError {
		t.Fatalf("write_file answered %s (%v)", res, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(picked, "notes", "hello.txt"))
	if err != nil || string(got) != "written through the bundle\n" {
		t.Errorf("the picked folder holds %q (%v), want what write_file wrote", got, err)
	}
	// The server kept its state under the HOME it was given
	// (.local/state/wink-mcp, or Library/Application Support/wink-mcp).
	if runtime.GOOS != "windows" && len(listTree(t, home)) == 0 {
		t.Errorf("the server kept no state under the HOME it was given")
	}
}

// TestFailedBuildLeavesNothing: a release whose second platform fails to
// build, after the first one's archive and bundle were made, leaves no
// OUTDIR and nothing beside it.
func TestFailedBuildLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "release")
	log, err := runDist(t, "-targets", Host().String()+",linux/nonesuch", "v0.0.0-test.2", out)
	if err == nil || !strings.Contains(log, "go build for linux/nonesuch") {
		t.Fatalf("dist: %v, want the build for linux/nonesuch to fail:\n%s", err, log)
	}
	if !strings.Contains(log, "made "+Host().Archive("0.0.0-test.2")) {
		t.Fatalf("the first platform was not made before the failure:\n%s", log)
	}
	if left := listTree(t, parent); len(left) > 0 {
		t.Errorf("a failed release left %q", left)
	}
}

// TestAllPlatforms runs the release command, scripts/dist, as a release
// is made: govulncheck, the six platforms, every bundle through the mcpb
// CLI; then checks every file. It takes minutes and needs the Go module
// proxy and the npm registry, so it runs only with WINK_DIST_ALL=1.
func TestAllPlatforms(t *testing.T) {
	if os.Getenv("WINK_DIST_ALL") != "1" {
		t.Skip("set WINK_DIST_ALL=1 to run scripts/dist for the six platforms")
	}
	const v = "0.0.0-test.3"
	out := filepath.Join(t.TempDir(), "release")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "dist"), "v"+v, out)
	msg, err := cmd.CombinedOutput()
	t.Logf("scripts/dist:\n%s", msg)
	if err != nil {
		t.Fatal(err)
	}
	checkRelease(t, out, v, Targets)
}

// checkRelease checks the release of version v for targets in out: exactly
// an archive and a bundle per target, checksums.txt and server.json; the
// sums are right; server.json passes the registry's schema and names each
// bundle by its download URL and sum; each archive holds the binary
// (executable, built for its platform with CGO_ENABLED=0 and -trimpath),
// README.md and LICENSE; each bundle's manifest is for its platform, has
// an executable entry point, and lists tools.
func checkRelease(t *testing.T, out, v string, targets []Target) {
	t.Helper()
	want := []string{"checksums.txt", "server.json"}
	for _, tg := range targets {
		want = append(want, tg.Archive(v), tg.Bundle(v))
	}
	slices.Sort(want)
	if got := listTree(t, out); !slices.Equal(got, want) {
		t.Fatalf("the release holds %q, want %q", got, want)
	}

	// checksums.txt, as sha256sum -c reads it.
	b, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: line %q is not sha256sum's", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
			t.Errorf("checksums.txt: %s is not the SHA-256 of %s", sum, name)
		}
		sums[name] = sum
	}
	if len(sums) != 2*len(targets) {
		t.Errorf("checksums.txt covers %d files, want the %d archives and bundles", len(sums), 2*len(targets))
	}

	// server.json.
	b, err = os.ReadFile(filepath.Join(out, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateServerJSON(t, b); err != nil {
		t.Errorf("server.json: %v", err)
	}
	var sj ServerJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		t.Fatal(err)
	}
	if sj.Name != RegistryName || sj.Version != v || len(sj.Packages) != len(targets) {
		t.Errorf("server.json: name %q, version %q, %d packages; want %q, %q, %d", sj.Name, sj.Version, len(sj.Packages), RegistryName, v, len(targets))
	}
	for i, p := range sj.Packages {
		if i >= len(targets) {
			break
		}
		bundle := targets[i].Bundle(v)
		if p.RegistryType != "mcpb" || p.Identifier != "https://github.com/wink-mcp/wink-mcp/releases/download/v"+v+"/"+bundle || p.FileSha256 != sums[bundle] || p.Transport.Type != "stdio" {
			t.Errorf("server.json package %d: %+v; want %s with SHA-256 %s", i, p, bundle, sums[bundle])
		}
	}

	for _, tg := range targets {
		files := archiveFiles(t, filepath.Join(out, tg.Archive(v)))
		wantFiles := map[string]os.FileMode{tg.Binary(): 0o755, "README.md": 0o644, "LICENSE": 0o644}
		if len(files) != len(wantFiles) {
			t.Errorf("%s holds %d files, want %d", tg.Archive(v), len(files), len(wantFiles))
		}
		for name, mode := range wantFiles {
			f, ok := files[name]
			if !ok || f.mode != mode {
				t.Errorf("%s: %s has mode %v (present: %v), want %v", tg.Archive(v), name, f.mode, ok, mode)
			}
		}
		bin := filepath.Join(t.TempDir(), tg.Binary())
		if err := os.WriteFile(bin, files[tg.Binary()].data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := CheckBinary(bin, tg); err != nil {
			t.Error(err)
		}
		if tg == Host() {
			if err := checkVersion(context.Background(), bin, v); err != nil {
				t.Error(err)
			}
		}
		for _, doc := range []string{"README.md", "LICENSE"} {
			if src, _ := os.ReadFile(filepath.Join(root, doc)); !bytes.Equal(files[doc].data, src) {
				t.Errorf("%s: %s is not the checkout's", tg.Archive(v), doc)
			}
		}

		dir := filepath.Join(t.TempDir(), "bundle")
		m, err := Unpack(filepath.Join(out, tg.Bundle(v)), dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.ManifestVersion != "0.3" || m.Version != v || m.Server.Type != "binary" ||
			m.Server.EntryPoint != "server/"+tg.Binary() || !slices.Equal(m.Compatibility.Platforms, []string{tg.Platform()}) {
			t.Errorf("%s: manifest %+v", tg.Bundle(v), m)
		}
		if len(m.Tools) == 0 || !slices.Contains(toolNames(m.Tools), "write_file") {
			t.Errorf("%s: the manifest lists tools %q", tg.Bundle(v), toolNames(m.Tools))
		}
		st, err := os.Stat(filepath.Join(dir, m.Server.EntryPoint))
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && st.Mode().Perm() != 0o755 {
			t.Errorf("%s: the entry point unpacks with mode %v, want 0755", tg.Bundle(v), st.Mode().Perm())
		}
		if got, _ := os.ReadFile(filepath.Join(dir, m.Server.EntryPoint)); !bytes.Equal(got, files[tg.Binary()].data) {
			t.Errorf("%s: the entry point is not the archive's binary", tg.Bundle(v))
		}
	}
}

// TestServerJSONSchema: the vendored schema is the pinned one, and it
// catches what the registry would refuse.
func TestServerJSONSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "server.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != schemaSHA256 {
		t.Fatalf("testdata/server.schema.json has SHA-256 %x, want %s", h, schemaSHA256)
	}
	sum := strings.Repeat("ab", 32)
	good := serverJSON("1.2.3", []string{"a.mcpb"}, map[string]string{"a.mcpb": sum})
	for _, tc := range []struct {
		name   string
		change func(*ServerJSON)
		ok     bool
	}{
		{"as made", func(*ServerJSON) {}, true},
		{"description over 100 characters", func(s *ServerJSON) { s.Description = strings.Repeat("x", 101) }, false},
		{"name without a namespace", func(s *ServerJSON) { s.Name = "wink-mcp" }, false},
		{"SHA-256 in upper case", func(s *ServerJSON) { s.Packages[0].FileSha256 = strings.ToUpper(sum) }, false},
		{"package version latest", func(s *ServerJSON) { s.Packages[0].Version = "latest" }, false},
		{"repository URL not a URI", func(s *ServerJSON) { s.Repository.URL = "not a uri" }, false},
	} {
		s := *good
		s.Packages = slices.Clone(good.Packages)
		tc.change(&s)
		doc, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateServerJSON(t, doc); (err == nil) != tc.ok {
			t.Errorf("%s: validation gave %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if n := len(registryDescription); n > 100 {
		t.Errorf("the registry description has %d characters, at most 100 allowed", n)
	}
}

func TestCommandRefuses(t *testing.T) {
	m, err := templateManifest("1.2.3", Target{"linux", "amd64"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Manifest)
		values map[string]string
		want   string
	}{
		{"no folder picked", nil, nil, `option "workspace" is required and has no value`},
		{"an option the manifest lacks", nil, map[string]string{"workspace": "/w", "colour": "red"}, `user_config has no option "colour"`},
		{"an undeclared option in args", func(m *Manifest) {
			m.Server.MCPConfig.Args = append(m.Server.MCPConfig.Args, "${user_config.read_only}")
		},
			map[string]string{"workspace": "/w"}, "${user_config.read_only}, which user_config does not declare"},
		{"a variable no host substitutes", func(m *Manifest) { m.Server.MCPConfig.Env = map[string]string{"X": "${APPDATA}"} },
			map[string]string{"workspace": "/w"}, "${APPDATA}, which this host does not substitute"},
	} {
		mm := *m
		mm.Server.MCPConfig.Args = slices.Clone(m.Server.MCPConfig.Args)
		if tc.change != nil {
			tc.change(&mm)
		}
		_, _, _, err := mm.Command("/b", "/h", tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	command, args, _, err := m.Command("/b", "/h", map[string]string{"workspace": "/w", "session": "s1", "log_level": "debug"})
	if err != nil || command != "/b/server/wink-mcp" || !slices.Equal(args, []string{"--workspace", "/w", "--session", "s1", "--log-level", "debug"}) {
		t.Errorf("Command = %q %q %v", command, args, err)
	}
}

// TestUnpackRefusesEscape: a bundle entry that would land outside the
// install folder is refused, and nothing is written there.
func TestUnpackRefusesEscape(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "evil.mcpb")
	if err := writeArchive(bundle, time.Now(), []entry{{"manifest.json", 0o644, []byte("{}")}, {"../outside", 0o755, []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(dir, "into")
	if _, err := Unpack(bundle, into); err == nil || !strings.Contains(err.Error(), "lands outside") {
		t.Errorf("Unpack: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); !os.IsNotExist(err) {
		t.Errorf("the escaping entry was written (%v)", err)
	}
}

func TestFirstSentence(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Read a file.", "Read a file."},
		{"Read a file. Then more.", "Read a file."},
		{"List files (e.g. *.go). More.", "List files (e.g. *.go)."},
		{"Show v1.2. Then more.", "Show v1.2."},
		{"  Two\nlines. ", "Two"},
		{"", ""},
	} {
		if got := firstSentence(tc.in); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// runDist builds the release command, internal/dist/cmd/dist, and runs it
// with args in the checkout, as scripts/dist does after govulncheck; it
// returns what the command wrote. (Run as its own process, not compiled
// with the race detector, it compresses the archives ten times faster than
// Release called from this test would.)
func runDist(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dist")
	if msg, err := exec.Command("go", "build", "-o", bin, "./cmd/dist").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dist: %v\n%s", err, msg)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1767323045")
	msg, err := cmd.CombinedOutput()
	return string(msg), err
}

// mcpbCLI returns the command that runs the mcpb CLI installed by
// scripts/mcpb.sh, or nil when it is not installed (an error with
// WINK_DIST_REQUIRE_MCPB=1).
func mcpbCLI(t *testing.T) []string {
	cli, err := filepath.Abs(filepath.Join(root, ".tools", "mcpb", "node_modules", "@anthropic-ai", "mcpb", "dist", "cli", "cli.js"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(cli)
	if err == nil {
		if _, err = exec.LookPath("node"); err == nil {
			return []string{"node", cli}
		}
	}
	if os.Getenv("WINK_DIST_REQUIRE_MCPB") == "1" {
		t.Fatalf("WINK_DIST_REQUIRE_MCPB=1 but the mcpb CLI cannot run (%v); run scripts/mcpb.sh", err)
	}
	t.Logf("the bundle is not checked with the mcpb CLI (%v); scripts/mcpb.sh installs it", err)
	return nil
}

func validateServerJSON(t *testing.T, doc []byte) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	f, err := os.Open(filepath.Join("testdata", "server.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.AddResource(ServerSchema, f); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(ServerSchema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	return schema.Validate(v)
}

type archived struct {
	mode os.FileMode
	data []byte
}

// archiveFiles reads a .tar.gz or .zip release archive.
func archiveFiles(t *testing.T, path string) map[string]archived {
	t.Helper()
	files := map[string]archived{}
	if strings.HasSuffix(path, ".zip") {
		dir := t.TempDir()
		if err := unzip(path, dir); err != nil {
			t.Fatal(err)
		}
		for _, name := range listTree(t, dir) {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(filepath.Join(dir, name))
			files[name] = archived{st.Mode().Perm(), data}
		}
		return files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = archived{os.FileMode(h.Mode).Perm(), data}
	}
}

// listTree returns the paths of the files and folders under dir (a
// folder's with a trailing /), sorted, relative to dir with forward
// slashes; none when dir does not exist.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			if d.IsDir() {
				rel += "/"
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func toolNames(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
