package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The evaluation section over the built binary, under attack: snippets
// and commands that loop, allocate, escape the workspace, use the network,
// fork, write outside or outlive the deadline are each answered with a
// clear error, change nothing, and the server serves on.

// evaluationConfig writes a configuration with the workspace and
// evaluation sections, run_command on when bwrap can run here, and returns
// its path and whether run_command is on.
func evaluationConfig(t *testing.T) (string, bool) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	if err != nil && os.Getenv("WINK_REQUIRE_BWRAP") != "" {
		t.Fatalf("WINK_REQUIRE_BWRAP is set, but: %v", err)
	}
	sandbox := err == nil
	cfg := "sections: [workspace, evaluation]\ndeadline: 3s\nevaluation:\n  max_steps: 200000\n"
	if sandbox {
		cfg += "  run_command:\n    enabled: true\n    processes: 64\n"
	}
	path := filepath.Join(t.TempDir(), "wink.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sandbox
}

// tree lists the files under dir with their contents.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+"="+string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type attack struct {
	name, tool, arg string
	want            string
}

// attacks runs each attack with c, then checks that the workspace in dir
// did not change and that the server still evaluates.
func attacks(t *testing.T, c caller, dir string, list []attack) {
	before := tree(t, dir)
	for _, a := range list {
		t.Run(a.name, func(t *testing.T) {
			key := "code"
			if a.tool == "run_command" {
				key = "command"
			}
			r := c.call(t, a.tool, map[string]any{key: a.arg})
			if !r.IsError || !strings.Contains(r.text(), a.want) {
				t.Errorf("failed = %v, want an error containing %q:\n%s", r.IsError, a.want, r.text())
			}
			if after := tree(t, dir); !slices.Equal(after, before) {
				t.Errorf("the workspace changed:\n got %q\nwant %q", after, before)
			}
			if r := c.call(t, "evaluate", map[string]any{"code": "1 + 1"}); r.IsError || !strings.Contains(r.text(), "Value: 2") {
				t.Errorf("the server does not evaluate after the attack: %s", r.text())
			}
		})
	}
}

// snippetAttacks are the Starlark attacks of both modes.
var snippetAttacks = []attack{
	{"endless loop, stopped by steps", "evaluate", "fs.write('a.txt', fs.read('a.txt') + 'x')\nwhile True:\n    pass", "ran out of steps (the limit is 200000)"},
	{"endless loop, stopped by the deadline", "evaluate", "fs.write('new.txt', 'x')\nwhile True:\n    s = 'x' * 4000000", "the call's deadline passed"},
	{"path escape", "evaluate", "fs.read('../../etc/passwd')", "Path segments may not include '.' or '..'."},
	{"write outside", "evaluate", "fs.write('new.txt', 'x')\nfs.write('../outside.txt', 'x')", "Path segments may not include '.' or '..'."},
	{"absolute path", "evaluate", "fs.read('/etc/passwd')", "File does not exist: etc/passwd"},
	{"no import", "evaluate", "load('os', 'system')", "load is not available"},
}

func TestEvaluationAttacksOverStdio(t *testing.T) {
	cfg, _ := evaluationConfig(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "", "--config", cfg, "--workspace", dir, "--store", "memory")
	p.initialize()
	attacks(t, &stdioClient{p: p}, dir, snippetAttacks)
}

// TestEvaluationAttacksOverHTTP: over HTTP, whose callers are not
// trusted, snippets run in child processes under an address-space limit;
// commands run in the sandbox.
func TestEvaluationAttacksOverHTTP(t *testing.T) {
	cfg, sandbox := evaluationConfig(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--config", cfg, "--workspace", dir, "--store", "memory")
	c := &httpClient{url: s.url}
	c.initialize(t)
	list := append(slices.Clone(snippetAttacks),
		attack{"1 GiB allocation", "evaluate", "fs.write('new.txt', 'x')\na = 'x' * (1 << 29)\nb = a + a\nlen(b)", "the snippet ran out of memory: it may use at most 256 MiB"},
	)
	marker := filepath.Join(os.TempDir(), "wink-e2e-outside-"+filepath.Base(dir))
	if sandbox {
		list = append(list,
			attack{"network", "run_command", `python3 -c 'import socket; socket.create_connection(("1.1.1.1", 53), 2)'`, "Network is unreachable"},
			attack{"a thousand processes", "run_command", "echo x > new.txt; for i in $(seq 1000); do sleep 10 & done; wait", "fork"},
			attack{"writes outside the workspace", "run_command", "echo x > new.txt; echo x > " + marker + "; echo x > ../outside.txt; echo x > /usr/outside.txt", "The command failed"},
			attack{"sleep past the deadline", "run_command", "echo x > new.txt; sleep 60", "The command was stopped: the call's deadline passed."},
			attack{"link to a host file", "run_command", "ln -s /etc/passwd passwd", "which is not a regular file"},
		)
	} else {
		t.Log("run_command attacks not run: bwrap is not installed (set WINK_REQUIRE_BWRAP to make this an error)")
	}
	attacks(t, c, dir, list)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a command wrote %s on the host: %v", marker, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside.txt")); !os.IsNotExist(err) {
		t.Errorf("a command wrote next to the workspace: %v", err)
	}
	if sandbox {
		r := c.call(t, "run_command", map[string]any{"command": "echo made > made.txt"})
		if data, err := os.ReadFile(filepath.Join(dir, "made.txt")); r.IsError || err != nil || string(data) != "made\n" {
			t.Errorf("a good command: %s; made.txt = %q, %v", r.text(), data, err)
		}
	}
	checkStderr(t, s.p.stderr.String())
}
