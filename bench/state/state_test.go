package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wink is the wink-mcp binary, built once for all tests.
var wink string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bench-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wink = filepath.Join(dir, "wink-mcp")
	if out, err := exec.Command("go", "build", "-o", wink, "../..").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCommands runs each command briefly and checks its report.
func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sessions", "--n", "20", "--c", "4"}, []string{"20 HTTP sessions (modern protocol)", "KiB per session"}},
		{[]string{"sessions", "--n", "20", "--c", "4", "--protocol", "legacy", "--flags", "--store memory"}, []string{"20 HTTP sessions (legacy protocol)", "KiB per session"}},
		{[]string{"growth", "--writes", "16", "--size", "2000"}, []string{"16 writes of 2000 bytes", "RSS growth: "}},
		{[]string{"percall", "--files", "0", "--calls", "2"}, []string{"0 files (flat), in memory", "planning_update_step", " µs "}},
		{[]string{"percall", "--files", "150", "--calls", "2", "--layout", "dirs", "--stored"}, []string{"150 files (dirs), in memory, --session", "rm "}},
		{[]string{"percall", "--files", "30", "--calls", "2", "--disk"}, []string{"30 files (flat), a disk workspace", "edit_file "}},
		{[]string{"percall", "--files", "120", "--against", "0", "--calls", "4", "--turn", "2", "--stored", "--restarts", "2"}, []string{"0 files (flat)", "120 files (flat)", "2 turns of 2 calls", "rm ", "resuming 120 files", "resuming, ratio by restart: "}},
		{[]string{"commit", "--files", "150", "--commits", "2", "--restarts", "1"}, []string{"a workspace of 150 files", "the store's directory grows by ", "to the answer to its first call"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append(tc.args, "--bin", wink), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("the report lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

// TestFailure: a server that cannot start, or a call that fails, fails
// the command, saying why.
func TestFailure(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small.yaml")
	if err := os.WriteFile(small, []byte("workspace:\n  max_file_bytes: 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"growth", "--bin", wink, "--flags", "--no-such-flag"}, "no-such-flag"},
		{[]string{"growth", "--bin", wink, "--writes", "1", "--size", "2000", "--flags", "--config " + small}, "isError"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("run(%q) = %d, stderr:\n%s\nwant 1 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope", "--bin", "x"},
		{"growth"},
		{"growth", "--bin", "x", "extra"},
		{"sessions", "--bin", "x", "--protocol", "sse"},
		{"commit", "--bin", "x", "--files", "0"},
		{"percall", "--bin", "x", "--layout", "deep"},
		{"percall", "--bin", "x", "--files", "-1"},
		{"percall", "--bin", "x", "--against", "-2"},
		{"percall", "--bin", "x", "--turn", "0"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr:\n%s", args, code, stderr.String())
		}
	}
}
