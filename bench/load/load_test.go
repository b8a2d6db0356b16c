package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildBare builds bench/bare into a temporary directory of t and returns
// the binary's path.
func buildBare(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bare")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, "../bare").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../bare: %v\n%s", err, out)
	}
	return bin
}

// TestBare measures the bare server, built once for all its subtests.
func TestBare(t *testing.T) {
	bare := buildBare(t)
	t.Run("measure", func(t *testing.T) { testMeasure(t, bare) })
	t.Run("compare", func(t *testing.T) { testCompare(t, bare) })
	t.Run("tool errors", func(t *testing.T) { testToolErrors(t, bare) })
	t.Run("run", func(t *testing.T) { testRun(t, bare) })
}

// testConfig returns a short measurement of tool on the server bare.
func testConfig(bare, tool, args string) Config {
	return Config{
		Label:       "bare",
		Cmd:         []string{bare},
		Tool:        tool,
		Args:        json.RawMessage(args),
		InFlight:    []int{1, 4},
		Calls:       200,
		Warmup:      20,
		Cold:        2,
		CallTimeout: 10 * time.Second,
	}
}

// testContext returns a context that bounds one test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testMeasure(t *testing.T, bare string) {
	for _, tc := range []struct{ tool, args string }{
		{"echo", `{"text":"hi"}`},
		{"setup_plan", `{"objective":"bench","initial_steps":["a","b","c"]}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			rep, err := measure(testContext(t), testConfig(bare, tc.tool, tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Cold == nil || rep.Cold.Runs != 2 || rep.Cold.MedianMS <= 0 || rep.Cold.P90MS < rep.Cold.MedianMS {
				t.Errorf("cold start = %+v, want 2 runs with positive times", rep.Cold)
			}
			if len(rep.Throughput) != 2 {
				t.Fatalf("got %d throughput runs, want 2", len(rep.Throughput))
			}
			for i, th := range rep.Throughput {
				if want := []int{1, 4}[i]; th.InFlight != want {
					t.Errorf("run %d: in-flight %d, want %d", i, th.InFlight, want)
				}
				if th.Calls != 200 || th.CallsPerSec <= 0 || th.P50MS <= 0 || th.P99MS < th.P50MS {
					t.Errorf("run %d: %+v, want 200 calls at a positive rate", i, th)
				}
				if th.failed() {
					t.Errorf("run %d: %d errors, %d isError results, %d timeouts: %s",
						i, th.Errors, th.ToolErrors, th.Timeouts, th.FirstError)
				}
			}
			if n := rep.Failures(); n != 0 {
				t.Errorf("Failures() = %d, want 0", n)
			}
		})
	}
}

func testCompare(t *testing.T, bare string) {
	a := testConfig(bare, "echo", `{"text":"hi"}`)
	b := testConfig(bare, "setup_plan", `{"objective":"bench","initial_steps":["a"]}`)
	a.Label, b.Label = "A", "B"
	rep, err := compare(testContext(t), a, b, Schedule{Rounds: 2, Procs: 2, Slices: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failures() != 0 {
		t.Errorf("Failures() = %d, want 0", rep.Failures())
	}
	if len(rep.A) != 2 || len(rep.B) != 2 {
		t.Fatalf("got %d and %d rounds, want 2 each", len(rep.A), len(rep.B))
	}
	for _, r := range slices.Concat(rep.A, rep.B) {
		for _, th := range r.Throughput {
			if th.Calls != 200 || th.Slices != 4 {
				t.Errorf("%s in-flight %d: %d calls in %d slices, want 200 in 4", th.Label, th.InFlight, th.Calls, th.Slices)
			}
		}
	}
	if len(rep.Levels) != 2 {
		t.Fatalf("got %d levels, want 2", len(rep.Levels))
	}
	for _, l := range rep.Levels {
		if l.ACallsPerSec <= 0 || l.BCallsPerSec <= 0 || l.Ratio <= 0 || len(l.RoundRatios) != 2 {
			t.Errorf("level %+v: want positive rates and ratio", l)
		}
	}
	if c := rep.Cold; c == nil || c.Runs != 4 || c.Ratio <= 0 {
		t.Errorf("cold = %+v, want 4 runs per side and a positive ratio", rep.Cold)
	}
}

func testToolErrors(t *testing.T, bare string) {
	cfg := testConfig(bare, "no_such_tool", `{}`)
	cfg.Cold, cfg.InFlight, cfg.Calls, cfg.Warmup = 0, []int{2}, 10, 0
	rep, err := measure(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Throughput[0].Errors; got != 10 {
		t.Errorf("errors = %d, want 10", got)
	}
	if rep.Throughput[0].FirstError == "" {
		t.Error("FirstError is empty")
	}
}

func testRun(t *testing.T, bare string) {
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"--cmd", bare, "--tool", "echo", "--args", `{"text":"hi"}`,
		"--inflight", "1,3", "--calls", "50", "--warmup", "5", "--cold", "1", "--json", "--timeout", "15s",
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var kinds []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var m struct {
			Kind   string `json:"kind"`
			Errors *int   `json:"errors"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, m.Kind)
	}
	if want := []string{"cold_start", "throughput", "throughput"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds = %q, want %q", kinds, want)
	}

	// A failed call makes the exit status 1.
	stdout.Reset()
	code = run([]string{"--cmd", bare, "--tool", "nope", "--calls", "5", "--warmup", "0", "--cold", "0", "--inflight", "1"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d for a missing tool, want 1", code)
	}
	if !strings.Contains(stdout.String(), "first failure") {
		t.Errorf("output does not quote the failure:\n%s", stdout.String())
	}
}

func TestServerThatExits(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cfg := testConfig("sh", "echo", `{}`)
	cfg.Cmd = []string{"sh", "-c", "echo oops >&2; exit 3"}
	start := time.Now()
	_, err := measure(testContext(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("err = %v, want an error quoting the server's stderr", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to notice the server exited", d)
	}
}

func TestServerThatHangs(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep")
	}
	cfg := testConfig("sleep", "echo", `{}`)
	cfg.Cmd = []string{"sleep", "60"}
	cfg.CallTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := measure(testContext(t), cfg)
	if err == nil {
		t.Fatal("no error from a server that never answers")
	}
	// The call times out, then close waits exitGrace for the server to
	// leave before killing it.
	if d := time.Since(start); d > cfg.CallTimeout+exitGrace+2*time.Second {
		t.Errorf("took %v to give up", d)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"bin/bare", []string{"bin/bare"}},
		{"  bin/wink --flag  x ", []string{"bin/wink", "--flag", "x"}},
		{`a 'b c' "d \"e\"" f\ g ''`, []string{"a", "b c", `d "e"`, "f g", ""}},
		{"", nil},
	} {
		got, err := splitCommand(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a\`} {
		if _, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q) succeeded, want an error", bad)
		}
	}
}

func TestPercentiles(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := percentile(d, 0.5); got != 5 {
		t.Errorf("p50 = %v, want 5", got)
	}
	if got := percentile(d, 0.9); got != 9 {
		t.Errorf("p90 = %v, want 9", got)
	}
	if got := percentile(d, 0.99); got != 10 {
		t.Errorf("p99 = %v, want 10", got)
	}
	if got := median(d); got != 5 {
		t.Errorf("median = %v, want 5 (5.5 truncated)", got)
	}
}
