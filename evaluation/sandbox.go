package evaluation

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Sandbox is how run_command runs a command: under bubblewrap (bwrap),
// with these limits. The command
//
//   - has no network, and its own PID, IPC, UTS and cgroup namespaces
//     (--unshare-all), so it sees and signals no process outside;
//   - sees the host's /usr (and the /bin, /lib, /lib64 and /sbin beside
//     it) read-only, a /proc and /dev of its own, an empty private /tmp
//     (a tmpfs of at most MemoryBytes), and the copy of the workspace as
//     /workspace, its working directory; nothing else of the host: no
//     /etc, no /home, no /root. The copy lives in a new directory of the
//     host's temporary directory ($TMPDIR, else /tmp), which the command
//     can fill, file by file up to the workspace's largest file: point
//     TMPDIR at a filesystem of bounded size to bound it;
//   - starts with an empty environment but for PATH, HOME=/tmp, LANG and
//     PYTHONDONTWRITEBYTECODE (the workspace holds text files only);
//   - runs as nobody (65534) when the server runs as root, so that the
//     process limit holds;
//   - is killed with everything it started when the call's deadline
//     passes or the server dies (--die-with-parent, and its PID
//     namespace ends with it);
//   - and is limited, per process, in CPU time, address space and the
//     size of a file it writes (the workspace's largest file), and in how
//     many processes its user may have (prlimit).
type Sandbox struct {
	// CPUSeconds caps each process's CPU time (SIGXCPU then, SIGKILL a
	// second later); DefaultCPUSeconds when zero.
	CPUSeconds int
	// MemoryBytes caps each process's address space;
	// DefaultCommandMemoryBytes when zero.
	MemoryBytes int64
	// Processes caps the processes the command's user may have at once;
	// DefaultProcesses when zero.
	Processes int

	// maxOutput caps what is kept of stdout and of stderr, each.
	maxOutput int
	// bwrap and prlimit are the paths of the programs.
	bwrap, prlimit string
}

// Defaults of Sandbox.
const (
	DefaultCPUSeconds         = 60
	DefaultCommandMemoryBytes = 1 << 30
	DefaultProcesses          = 64
)

// defaults fills in the zero limits.
func (s *Sandbox) defaults(maxOutput int) {
	if s.CPUSeconds <= 0 {
		s.CPUSeconds = DefaultCPUSeconds
	}
	if s.MemoryBytes <= 0 {
		s.MemoryBytes = DefaultCommandMemoryBytes
	}
	if s.Processes <= 0 {
		s.Processes = DefaultProcesses
	}
	s.maxOutput = maxOutput
}

// Check finds bwrap and prlimit and runs an empty sandbox, so that a
// machine where commands cannot be sandboxed (no bwrap, or user
// namespaces forbidden) is an error at startup that says why, never a
// command run without the sandbox.
func (s *Sandbox) Check() error {
	var err error
	if s.bwrap, err = exec.LookPath("bwrap"); err != nil {
		return fmt.Errorf("evaluation.run_command needs bubblewrap (bwrap), which is not installed here: %w; install it (Debian: apt-get install bubblewrap) or turn run_command off", err)
	}
	if s.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return fmt.Errorf("evaluation.run_command needs prlimit (util-linux), which is not installed here: %w", err)
	}
	dir, err := os.MkdirTemp("", "wink-run-check-")
	if err != nil {
		return fmt.Errorf("evaluation.run_command: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := s.own(dir); err != nil {
		return fmt.Errorf("evaluation.run_command: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := s.command(ctx, dir, "true", 1<<20)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("evaluation.run_command: bubblewrap cannot make its sandbox here (%v: %s); user namespaces may be forbidden (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or an AppArmor restriction on unprivileged user namespaces)", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// nobody is the user a command runs as when the server runs as root.
const nobody = 65534

// own gives the directory dir to the user commands run as, when that is
// not the server's.
func (s *Sandbox) own(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
}

// command returns the command that runs the shell command line under
// bubblewrap, with dir as /workspace and files of at most maxFile bytes;
// it is killed when ctx is done.
func (s *Sandbox) command(ctx context.Context, dir, line string, maxFile int64) *exec.Cmd {
	args := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(s.MemoryBytes, 10), "--tmpfs", "/tmp",
		"--bind", dir, "/workspace", "--chdir", "/workspace",
		"--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
		"--", s.prlimit,
		"--cpu="+strconv.Itoa(s.CPUSeconds)+":"+strconv.Itoa(s.CPUSeconds+1),
		"--as="+strconv.FormatInt(s.MemoryBytes, 10),
		"--fsize="+strconv.FormatInt(maxFile, 10),
		"--nproc="+strconv.Itoa(s.Processes),
		"--", "/bin/sh", "-c", line,
	)
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.Env = []string{}
	cmd.WaitDelay = time.Second
	if os.Geteuid() == 0 {
		runAs(cmd, nobody)
	}
	return cmd
}
