package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// server is one server under measurement with its sessions open: a process
// started for the measurement or, over HTTP, a server given by its URL.
type server struct {
	cmd     *exec.Cmd // nil for a server given by URL
	stderr  tail
	exited  chan struct{} // closed when the process has exited
	clients []client
	// cold is the time from starting the process to the answer to the
	// first initialize.
	cold time.Duration
}

// open starts the server of s and opens sessions on it: one over stdio,
// sessions over HTTP. The caller must close the server, also on error.
func open(ctx context.Context, transport string, s *side, sessions int) (*server, error) {
	srv := &server{exited: make(chan struct{})}
	if transport == "stdio" {
		srv.cmd = srv.command(ctx, s.argv)
		stdin, err := srv.cmd.StdinPipe()
		if err != nil {
			return srv, err
		}
		stdout, err := srv.cmd.StdoutPipe()
		if err != nil {
			return srv, err
		}
		t0 := time.Now()
		if err := srv.start(); err != nil {
			return srv, err
		}
		c := newStdioClient(stdin, stdout)
		srv.clients = []client{c}
		err = initialize(ctx, c)
		srv.cold = time.Since(t0)
		return srv, srv.explain(err)
	}

	url := s.url
	if url == "" {
		addr, err := freeAddr()
		if err != nil {
			return srv, err
		}
		url = "http://" + addr + "/mcp"
		srv.cmd = srv.command(ctx, append(s.argv, "--http", addr))
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	t0 := time.Now()
	if err := srv.start(); err != nil {
		return srv, err
	}
	for i := range sessions {
		c := &httpClient{hc: hc, url: url}
		err := initialize(ctx, c)
		// The first session waits for a started server to listen.
		for i == 0 && srv.cmd != nil && errors.Is(err, syscall.ECONNREFUSED) {
			select {
			case <-srv.exited:
				return srv, srv.explain(errors.New("the server exited"))
			case <-time.After(time.Millisecond):
			}
			err = initialize(ctx, c)
		}
		if err != nil {
			return srv, srv.explain(err)
		}
		srv.clients = append(srv.clients, c)
		if i == 0 && srv.cmd != nil {
			srv.cold = time.Since(t0)
		}
	}
	return srv, nil
}

// command returns the command that runs argv, killed when ctx is done.
func (srv *server) command(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = &srv.stderr
	cmd.WaitDelay = time.Second
	return cmd
}

// start starts the process, if there is one.
func (srv *server) start() error {
	if srv.cmd == nil {
		return nil
	}
	if err := srv.cmd.Start(); err != nil {
		return err
	}
	go func() {
		_ = srv.cmd.Wait()
		close(srv.exited)
	}()
	return nil
}

// explain adds to err what the process wrote last on its stderr.
func (srv *server) explain(err error) error {
	if err == nil || srv.cmd == nil {
		return err
	}
	select {
	case <-srv.exited: // all of its stderr is in
	case <-time.After(200 * time.Millisecond):
	}
	if t := srv.stderr.String(); t != "" {
		return fmt.Errorf("%w; the server's stderr ends with:\n%s", err, t)
	}
	return err
}

// close ends the sessions and the process.
func (srv *server) close() {
	for _, c := range srv.clients {
		c.close()
	}
	if srv.cmd != nil && srv.cmd.Process != nil {
		_ = srv.cmd.Process.Kill()
		<-srv.exited
	}
}

// cpuTime returns the CPU time, user and system, that the process has used
// so far; 0 where /proc/PID/stat cannot be read (outside Linux, or for a
// server given by URL).
func (srv *server) cpuTime() time.Duration {
	b := srv.proc("stat")
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

// peakRSS returns the peak resident set size of the process in KiB (VmHWM
// in /proc/PID/status); 0 where it cannot be read.
func (srv *server) peakRSS() int64 {
	for line := range bytes.Lines(srv.proc("status")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return n
		}
	}
	return 0
}

// proc returns the content of the process's file /proc/PID/name, or
// nothing.
func (srv *server) proc(name string) []byte {
	if srv.cmd == nil || srv.cmd.Process == nil {
		return nil
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", srv.cmd.Process.Pid, name))
	return b
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr() (string, error) {
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
