package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// bins holds the servers built once for all tests: bench/bare and wink-mcp.
var bins struct{ bare, wink string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bench-load")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.bare, bins.wink = filepath.Join(dir, "bare"), filepath.Join(dir, "wink-mcp")
	for bin, pkg := range map[string]string{bins.bare: "../bare", bins.wink: "../.."} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// short is the flags of a brief run.
var short = []string{"--calls", "40", "--warmup", "5", "--rounds", "2", "--inflight", "1,4", "--timeout", "1m"}

const planArgs = `{"objective":"bench","initial_steps":["a","b","c"]}`

// TestCompare measures bare and wink side by side over each transport,
// wink also with every lifecycle hook on and off (bench/hooks.yaml and
// bench/nohooks.yaml).
func TestCompare(t *testing.T) {
	hooks, err := filepath.Abs("../hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nohooks, err := filepath.Abs("../nohooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the audit file of hooks.yaml goes here
	for _, tc := range []struct {
		transport string
		sessions  string
	}{
		{"stdio", "1"},
		{"http", "1"},
		{"http", "3"},
	} {
		t.Run(tc.transport+"/"+tc.sessions, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--transport", tc.transport, "--sessions", tc.sessions,
				"--side", "echo=" + bins.bare, "--tool", "echo", "--args", `{"text":"hi"}`,
				"--side", "plan=" + bins.bare, "--tool", "setup_plan", "--args", planArgs,
				"--side", "wink=" + bins.wink, "--tool", "planning_setup_plan",
				"--side", "hooks=" + bins.wink + " --config " + hooks,
				"--side", "nohooks=" + bins.wink + " --config " + nohooks,
			}, short...), &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			out := stdout.String()
			for _, want := range []string{"in-flight 1\n", "in-flight 4\n", " echo ", " plan ", " wink ", " hooks ", " nohooks ", " 1.000 "} {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
		})
	}
	if _, err := os.Stat("audit.jsonl"); err != nil {
		t.Errorf("wink with bench/hooks.yaml wrote no audit file: %v", err)
	}
}

// TestInterleave measures two sides together, in turns, over each
// transport: wink with the history and without, in the embedded store,
// as docs/performance.md does.
func TestInterleave(t *testing.T) {
	dir := t.TempDir()
	on, off := filepath.Join(dir, "on.yaml"), filepath.Join(dir, "off.yaml")
	for f, sections := range map[string]string{on: "planning, workspace, history", off: "planning, workspace"} {
		if err := os.WriteFile(f, []byte("sections: ["+sections+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for transport, session := range map[string]string{"stdio": " --session bench", "http": ""} {
		t.Run(transport, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--transport", transport, "--interleave", "15",
				"--side", "off=" + bins.wink + session + " --config " + off + " --state-dir " + filepath.Join(dir, transport, "off"),
				"--tool", "planning_setup_plan", "--args", `{"objective":"bench {{n}}","initial_steps":["a"]}`,
				"--side", "on=" + bins.wink + session + " --config " + on + " --state-dir " + filepath.Join(dir, transport, "on"),
			}, short...), &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			out := stdout.String()
			// 2 rounds of 40 calls in turns of 15: 3 turns a round.
			for _, want := range []string{"interleaved in turns of 15 calls", "in-flight 1, 6 turns\n", "in-flight 4, 6 turns\n", " off ", " on ", " 1.000  1.000-1.000      1.000 "} {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestURL measures a server already running, given by its URL.
func TestURL(t *testing.T) {
	addr, err := mcpc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.bare, "--http", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var stdout, stderr bytes.Buffer
	args := append([]string{"--transport", "http", "--side", "bare=http://" + addr + "/mcp", "--tool", "echo", "--args", `{"text":"hi"}`}, short...)
	for deadline := time.Now().Add(10 * time.Second); ; {
		stdout.Reset()
		stderr.Reset()
		if run(args, &stdout, &stderr) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run against %s: %s", addr, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stdout.String(), " bare ") {
		t.Errorf("the report lacks the side:\n%s", stdout.String())
	}
}

// TestFailure checks that a run fails, saying why, when a call fails or
// the server does.
func TestFailure(t *testing.T) {
	exits := filepath.Join(t.TempDir(), "exits")
	if err := os.WriteFile(exits, []byte("#!/bin/sh\necho oops >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		side []string
		want string
	}{
		{"no such tool", []string{"--side", "bare=" + bins.bare, "--tool", "nope"}, "nope"},
		{"isError result", []string{"--side", "wink=" + bins.wink, "--tool", "read_file", "--args", `{"file_path":"missing.txt"}`}, "isError"},
		{"server exits", []string{"--side", "exits=" + exits, "--tool", "echo"}, "oops"},
	} {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(append(append([]string{"--transport", transport}, tc.side...), short...), &stdout, &stderr)
				if code != 1 || !strings.Contains(stderr.String(), tc.want) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr.String(), tc.want)
				}
			})
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--tool", "echo", "--side", "a=x"},
		{"--side", "a=x"},
		{"--side", "=x", "--tool", "echo"},
		{"--side", "a=http://localhost/mcp", "--tool", "echo"},
		{"--side", "a=x", "--tool", "echo", "--args", "{"},
		{"--side", "a=x", "--tool", "echo", "--inflight", "1,0"},
		{"--side", "a=x", "--tool", "echo", "--transport", "sse"},
		{"--side", "a=x", "--tool", "echo", "--calls", "0"},
		{"--side", "a=x", "--tool", "echo", "--interleave", "-1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr:\n%s", args, code, stderr.String())
		}
	}
}

func TestStatistics(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}} {
		if got := percentile(d, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 = %v, want 2", got)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median of 4 = %v, want 2.5", got)
	}
	for _, tc := range []struct {
		values     []float64
		q1, q2, q3 float64
	}{
		{[]float64{7}, 7, 7, 7},
		{[]float64{4, 1, 3, 2}, 1.5, 2.5, 3.5},
		{[]float64{5, 1, 4, 2, 3}, 1.5, 3, 4.5},
	} {
		if q1, q2, q3 := quartiles(tc.values); q1 != tc.q1 || q2 != tc.q2 || q3 != tc.q3 {
			t.Errorf("quartiles(%v) = %v, %v, %v, want %v, %v, %v", tc.values, q1, q2, q3, tc.q1, tc.q2, tc.q3)
		}
	}
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   []string
	}{
		{`{"a":"x"}`, []string{`{"a":"x"}`, `{"a":"x"}`}},
		{`{"a":"x {{n}}","b":"{{n}}"}`, []string{`{"a":"x 0","b":"0"}`, `{"a":"x 1","b":"1"}`, `{"a":"x 2","b":"2"}`}},
	} {
		tp := newTemplate([]byte(tc.params))
		for _, want := range tc.want {
			if got := string(tp.next()); got != want {
				t.Errorf("%s: next() = %s, want %s", tc.params, got, want)
			}
		}
	}
}
