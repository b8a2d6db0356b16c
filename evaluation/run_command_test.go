package evaluation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needSandbox skips a test where bubblewrap cannot run, saying why, unless
// WINK_REQUIRE_BWRAP is set (as CI sets it): then it fails.
func needSandbox(t *testing.T) {
	t.Helper()
	sb := &Sandbox{}
	sb.defaults(DefaultMaxOutputBytes)
	if err := sb.Check(); err != nil {
		if os.Getenv("WINK_REQUIRE_BWRAP") != "" {
			t.Fatalf("WINK_REQUIRE_BWRAP is set, but: %v", err)
		}
		t.Skipf("run_command cannot run here: %v", err)
	}
}

func TestRunCommand(t *testing.T) {
	needSandbox(t)
	for name := range backends {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, name, map[string]string{"a.txt": "alpha\n", "src/b.txt": "beta\n"}, Options{RunCommand: &Sandbox{Processes: 32}}, time.Minute)
			for _, tc := range []struct {
				name, command string
				fail          bool
				want          []string
			}{
				{"reads the copy and writes back", "cat a.txt && mkdir -p out && echo hi > out/new.txt", false, []string{"stdout:\nalpha", "Changed: out/new.txt", "changed 1 file"}},
				{"python", `python3 -c 'print(6 * 7)'`, false, []string{"stdout:\n42"}},
				{"unread file is not overwritten", "echo x > src/b.txt", true, []string{"File 'src/b.txt' must be read before overwriting.", "No file was changed."}},
				{"exit status fails the call", "echo partial > c.txt; exit 3", true, []string{"exit status 3", "No file was changed."}},
				{"no host files", "ls /etc/passwd /home /root", true, []string{"No such file or directory"}},
				{"system directories are read-only", "echo x > /usr/x", true, []string{"Read-only file system"}},
				{"a link out is refused", "ln -s /etc/passwd link", true, []string{"link, which is not a regular file", "No file was changed."}},
				{"no network", `python3 -c 'import socket; socket.create_connection(("1.1.1.1", 53), 2)'`, true, []string{"Network is unreachable"}},
				{"memory limit", `python3 -c 'x = bytearray(2 << 30)'`, true, []string{"MemoryError"}},
				{"file size limit", "head -c 40000000 /dev/zero > big", true, []string{"killed by signal 25, file size limit exceeded: it wrote a file larger than the workspace's largest file"}},
				{"process limit", "for i in $(seq 100); do sleep 1 & done; wait", true, []string{"fork"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					text, isErr := h.call("run_command", map[string]string{"command": tc.command})
					if isErr != tc.fail {
						t.Fatalf("failed = %v, want %v: %s", isErr, tc.fail, text)
					}
					for _, w := range tc.want {
						if !strings.Contains(text, w) {
							t.Errorf("result does not contain %q:\n%s", w, text)
						}
					}
				})
			}
			for _, p := range []string{"c.txt", "link"} {
				if got := h.read(p); !strings.Contains(got, "does not exist") {
					t.Errorf("%s exists after a failed command: %s", p, got)
				}
			}
			if got := h.read("src/b.txt"); !strings.Contains(got, "beta") {
				t.Errorf("src/b.txt = %s", got)
			}
			// Read first, a file may be changed; a removal is applied.
			text, isErr := h.call("run_command", map[string]string{"command": "echo gamma >> src/b.txt && rm a.txt"})
			if isErr || !strings.Contains(text, "Changed: a.txt, src/b.txt") {
				t.Fatalf("change and removal: %s", text)
			}
			if got := h.read("src/b.txt"); !strings.Contains(got, "gamma") {
				t.Errorf("src/b.txt = %s", got)
			}
			if got := h.read("a.txt"); !strings.Contains(got, "does not exist") {
				t.Errorf("a.txt was not removed: %s", got)
			}
			if h.dir != "" {
				if data, err := os.ReadFile(filepath.Join(h.dir, "src/b.txt")); err != nil || string(data) != "beta\ngamma\n" {
					t.Errorf("on disk src/b.txt = %q, %v", data, err)
				}
			}
		})
	}
}

// TestRunCommandTime: a command is stopped by the call's deadline, and by
// its CPU time limit, whichever comes first, and changes nothing. (Each
// has a harness of its own: on a loaded machine a CPU second may take many
// seconds.)
func TestRunCommandTime(t *testing.T) {
	needSandbox(t)
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		command  string
		want     string
	}{
		{"deadline", time.Second, "echo partial > d.txt; sleep 60", "The command was stopped: the call's deadline passed. No file was changed."},
		{"CPU limit", 2 * time.Minute, "echo partial > d.txt; while :; do :; done", "killed by signal 24, CPU time limit exceeded: it used up its CPU time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "memory", nil, Options{RunCommand: &Sandbox{CPUSeconds: 1}}, tc.deadline)
			text, isErr := h.call("run_command", map[string]string{"command": tc.command})
			if !isErr || !strings.Contains(text, tc.want) {
				t.Errorf("failed = %v: %s\nwant it to contain %q", isErr, text, tc.want)
			}
			if got := h.read("d.txt"); !strings.Contains(got, "does not exist") {
				t.Errorf("d.txt exists after a stopped command: %s", got)
			}
		})
	}
}

// TestSandboxCheck: a machine without bwrap is an error at startup that
// says so.
func TestSandboxCheck(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Options{RunCommand: &Sandbox{}})
	if err == nil || !strings.Contains(err.Error(), "needs bubblewrap (bwrap), which is not installed here") {
		t.Errorf("New without bwrap: %v", err)
	}
}
