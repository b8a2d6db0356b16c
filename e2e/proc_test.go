package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// raceBuild is set by race_test.go when the tests run with -race; the
// binary under test is then built with the race detector too, so that a
// data race in the server fails the test (it prints a report to stderr and
// exits 66).
var raceBuild bool

// binary is the path of the wink-mcp binary under test, set by TestMain.
var binary string

// failsafe bounds the life of every spawned process. Nothing waits on it
// for synchronisation; it only turns a hang into a failure.
const failsafe = 2 * time.Minute

// initializeRequest and initializedNotification open a session. The
// request has id 0 so that scenario requests can number from 1.
const (
	initializeRequest       = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wink-e2e","version":"1"}}}`
	initializedNotification = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if bin := os.Getenv("WINK_E2E_BINARY"); bin != "" {
		binary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "wink-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	binary = filepath.Join(dir, "wink-mcp")
	args := []string{"build", "-o", binary}
	if raceBuild {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building %s: %v\n", root, err)
		return 1
	}
	return m.Run()
}

// proc is one running wink-mcp process, driven over stdio.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.WriteCloser
	lines  chan []byte // stdout lines, closed at EOF
	stderr *syncBuffer

	out    [][]byte // every stdout line read so far, in order
	eof    bool     // lines is closed
	exited bool
	code   int
}

// syncBuffer is a bytes.Buffer safe for the process's stderr copier and
// the test to use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start spawns the binary with args in dir ("" for a temporary directory).
// The process is killed at the end of the test if it is still running.
func start(t testing.TB, dir string, args ...string) *proc {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	// A state directory of its own (the default session store's), unless
	// args name one.
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+t.TempDir())
	cmd.WaitDelay = 10 * time.Second
	p := &proc{t: t, cmd: cmd, cancel: cancel, lines: make(chan []byte, 64), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", binary, err)
	}
	go func() {
		defer close(p.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if !p.exited {
			_ = cmd.Process.Kill()
			p.drain()
			_ = cmd.Wait()
		}
		cancel()
	})
	return p
}

// send writes one line to the process's stdin.
func (p *proc) send(line string) error {
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// mustSend is send that fails the test on error.
func (p *proc) mustSend(line string) {
	p.t.Helper()
	if err := p.send(line); err != nil {
		p.t.Fatalf("writing to stdin: %v", err)
	}
}

// next returns the next stdout line, or false at EOF. It records the line.
// The failsafe timeout ends the process, and so the wait.
func (p *proc) next() ([]byte, bool) {
	if p.eof {
		return nil, false
	}
	line, ok := <-p.lines
	if !ok {
		p.eof = true
		return nil, false
	}
	p.out = append(p.out, line)
	return line, true
}

// drain reads stdout to EOF.
func (p *proc) drain() {
	for {
		if _, ok := p.next(); !ok {
			return
		}
	}
}

// frame is a decoded stdout line.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (f frame) isResponse() bool { return f.Method == "" && (f.Result != nil || f.Error != nil) }

// await reads stdout until the response whose id is id (compact JSON), or
// any response when id is "". It returns false at EOF.
func (p *proc) await(id string) (frame, bool) {
	for {
		line, ok := p.next()
		if !ok {
			return frame{}, false
		}
		var f frame
		if json.Unmarshal(line, &f) != nil || !f.isResponse() {
			continue
		}
		if id == "" || compactJSON(f.ID) == id {
			return f, true
		}
	}
}

// call sends a request and returns its response; the test fails if there
// is none.
func (p *proc) call(id int, method string, params any) frame {
	p.t.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mustSend(string(b))
	f, ok := p.await(fmt.Sprint(id))
	if !ok {
		p.t.Fatalf("no response to %s (id %d); stderr:\n%s", method, id, p.stderr)
	}
	return f
}

// initialize opens the MCP session.
func (p *proc) initialize() {
	p.t.Helper()
	p.mustSend(initializeRequest)
	if f, ok := p.await("0"); !ok || f.Error != nil {
		p.t.Fatalf("initialize failed; stderr:\n%s", p.stderr)
	}
	p.mustSend(initializedNotification)
}

// closeStdin ends the input; the server should then drain and exit.
func (p *proc) closeStdin() {
	_ = p.stdin.Close()
}

// wait reads stdout to EOF and waits for the process to exit, returning
// its exit code (-1 when a signal killed it).
func (p *proc) wait() int {
	p.t.Helper()
	if p.exited {
		return p.code
	}
	p.drain()
	err := p.cmd.Wait()
	p.exited = true
	p.cancel()
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.code = 0
	case errors.As(err, &ee):
		p.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.t.Errorf("process killed by %v (failsafe timeout %v?)", ws.Signal(), failsafe)
		}
	default:
		p.t.Fatalf("waiting for the process: %v", err)
	}
	return p.code
}

// signal sends sig to the process.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if runtime.GOOS == "windows" {
		p.t.Skip("signals are not supported on windows")
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// checkFrames reports every stdout line that is not a JSON-RPC 2.0 frame.
func checkFrames(t testing.TB, lines [][]byte) {
	t.Helper()
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Errorf("stdout line %d is not a JSON object: %v\n%s", i+1, err, truncate(line))
			continue
		}
		if m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line %d is not a JSON-RPC 2.0 frame:\n%s", i+1, truncate(line))
		}
	}
}

// textLogLine matches a line of the text log format when stderr is not a
// terminal (slog's): "time=... level=INFO msg=...".
var textLogLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR)([+-]\d+)? msg=`)

// isLogLine reports whether line is one log record, in the text or JSON
// format.
func isLogLine(line string) bool {
	if textLogLine.MatchString(line) {
		return true
	}
	var rec struct {
		Time  string  `json:"time"`
		Level string  `json:"level"`
		Msg   *string `json:"msg"`
	}
	return json.Unmarshal([]byte(line), &rec) == nil && rec.Time != "" && rec.Level != "" && rec.Msg != nil
}

// checkStderr reports every stderr line that is not a log line.
func checkStderr(t testing.TB, stderr string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if line != "" && !isLogLine(line) {
			t.Errorf("stderr line %d is not a log line: %s", i+1, truncate([]byte(line)))
		}
	}
}

func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

func truncate(b []byte) string {
	const max = 2000
	if len(b) <= max {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes)", b[:max], len(b))
}
