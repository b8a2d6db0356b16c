package mcpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Process is a server process under measurement.
type Process struct {
	cmd     *exec.Cmd
	stdin   io.Closer // nil unless started with StartStdio
	stderr  tail
	exited  chan struct{} // closed when the process has exited
	waitErr error         // how it exited, once exited is closed
	started time.Time
}

// Start starts the server argv, killed when ctx is done.
func Start(ctx context.Context, argv []string) (*Process, error) {
	p := newProcess(exec.CommandContext(ctx, argv[0], argv[1:]...))
	return p, p.start()
}

// StartStdio starts the server argv, killed when ctx is done, with a
// client on its stdin and stdout.
func StartStdio(ctx context.Context, argv []string) (*Process, *Stdio, error) {
	return StartStdioCmd(exec.CommandContext(ctx, argv[0], argv[1:]...))
}

// StartStdioCmd is StartStdio for a command its caller made, with its own
// environment or directory; its standard streams must be unset.
func StartStdioCmd(cmd *exec.Cmd) (*Process, *Stdio, error) {
	p := newProcess(cmd)
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return p, nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return p, nil, err
	}
	if err := p.start(); err != nil {
		return p, nil, err
	}
	p.stdin = stdin
	return p, NewStdio(stdin, stdout), nil
}

func newProcess(cmd *exec.Cmd) *Process {
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = time.Second
	return p
}

func (p *Process) start() error {
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		close(p.exited)
		return err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return nil
}

// Pid returns the process's id; 0 if it did not start.
func (p *Process) Pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Since returns the time since the process was started.
func (p *Process) Since() time.Duration { return time.Since(p.started) }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Explain adds to err what the process wrote last on its stderr.
func (p *Process) Explain(err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-p.exited: // all of its stderr is in
	case <-time.After(200 * time.Millisecond):
	}
	if t := p.stderr.String(); t != "" {
		return fmt.Errorf("%w; the server's stderr ends with:\n%s", err, t)
	}
	return err
}

// ExitErr returns how the process exited (nil for status 0), once it has
// (Exited).
func (p *Process) ExitErr() error {
	<-p.exited
	return p.waitErr
}

// Kill ends the process at once and waits for it.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// Stop asks the process to end, by closing its stdin (a stdio server) or
// with SIGTERM, and waits for it to exit; after timeout it kills it and
// says so.
func (p *Process) Stop(timeout time.Duration) error {
	if p.stdin != nil {
		_ = p.stdin.Close()
	} else if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		p.Kill()
		return p.Explain(errors.New("the server did not exit in time; killed"))
	}
}

// CPUTime returns the CPU time that the process has used so far, as
// CPUTimeOf.
func (p *Process) CPUTime() time.Duration {
	if p.cmd.Process == nil {
		return 0
	}
	return CPUTimeOf(p.cmd.Process.Pid)
}

// CPUTimeOf returns the CPU time that process pid has used so far, to the
// nanosecond: the sum over its threads of the time each has run
// (/proc/PID/task/TID/schedstat), where /proc/PID/stat counts in ticks of
// 10 ms, too coarse for the few hundred calls of a benchmark's round. A
// thread that has exited is not counted (a Go process rarely ends one).
// Where schedstat cannot be read, it is the time /proc/PID/stat gives; 0
// outside Linux.
func CPUTimeOf(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	read := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has exited
		}
		f := bytes.Fields(b)
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			continue
		}
		sum += time.Duration(ns)
		read++
	}
	if read == 0 {
		return ticksOf(pid)
	}
	return sum
}

// ticksOf returns the CPU time, user and system, that process pid has
// used so far in ticks of 10 ms; 0 where /proc/PID/stat cannot be read.
func ticksOf(pid int) time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// utime and stime are the 12th and 13th fields after the command name,
	// which is in parentheses, in clock ticks of 1/100 s.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	s, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// RSS returns the resident set size of the process in KiB (VmRSS in
// /proc/PID/status); 0 where it cannot be read.
func (p *Process) RSS() int64 { return p.status("VmRSS:") }

// PeakRSS returns the peak resident set size of the process in KiB (VmHWM
// in /proc/PID/status); 0 where it cannot be read.
func (p *Process) PeakRSS() int64 { return p.status("VmHWM:") }

// Written returns the bytes the process has passed to write(2) and its
// kin so far (wchar in /proc/PID/io): its store's files, its log and its
// frames; 0 where it cannot be read.
func (p *Process) Written() int64 {
	for line := range bytes.Lines(p.proc("io")) {
		if v, ok := bytes.CutPrefix(line, []byte("wchar:")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
}

// status returns the figure in kB of the field of /proc/PID/status.
func (p *Process) status(field string) int64 {
	for line := range bytes.Lines(p.proc("status")) {
		if v, ok := bytes.CutPrefix(line, []byte(field)); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return n
		}
	}
	return 0
}

// proc returns the content of the process's file /proc/PID/name, or
// nothing.
func (p *Process) proc(name string) []byte {
	if p.cmd.Process == nil {
		return nil
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.cmd.Process.Pid, name))
	return b
}

// FreeAddr returns a loopback address with a port free at the moment.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// tail keeps the last 2 KiB written to it, to quote a server's stderr.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if n := len(t.b) - 2048; n > 0 {
		t.b = append(t.b[:0], t.b[n:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// AwaitListen waits until addr accepts connections, for a server the
// process starts, or until ctx is done or the process exits.
func (p *Process) AwaitListen(ctx context.Context, addr string) error {
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return p.Explain(ctx.Err())
		case <-p.exited:
			return p.Explain(errors.New("the server exited"))
		case <-time.After(time.Millisecond):
		}
	}
}
