package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// childEnv, set to 1 in a process's environment, makes the server's binary
// an evaluation child (Child) instead of a server.
const childEnv = "WINK_EVALUATION_CHILD"

// IsChild reports whether this process was started as an evaluation
// child. main asks first thing, and then runs Child instead of the
// server.
func IsChild() bool { return os.Getenv(childEnv) == "1" }

// The pipe protocol: one JSON value per line each way. The child says it
// is ready (message{Op: "ready"}); the parent limits the child's address
// space and sends the snippet (reply{Code, Limits}); the child sends a
// request per fs builtin (message{Op, Args}), each answered by a reply
// (Value or Error), and at the end its run (message{Done}).

// message is a line from the child.
type message struct {
	Op   string   `json:"op,omitempty"`
	Args []string `json:"args,omitempty"`
	Done *run     `json:"done,omitempty"`
}

// reply is a line from the parent.
type reply struct {
	Code   string          `json:"code,omitempty"`
	Limits *limits         `json:"limits,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// capped are the paths or matches of fs.glob and fs.grep over the pipe.
type capped[T any] struct {
	Items  []T  `json:"items"`
	Capped bool `json:"capped"`
}

// Child serves one snippet as an evaluation child, reading the parent's
// replies from in and writing its messages to out, and returns the
// process's exit code.
func Child(in io.Reader, out io.Writer) int {
	p := &pipe{enc: json.NewEncoder(out), dec: json.NewDecoder(in)}
	if err := p.enc.Encode(message{Op: "ready"}); err != nil {
		return 1
	}
	var start reply
	if err := p.dec.Decode(&start); err != nil || start.Limits == nil {
		fmt.Fprintln(os.Stderr, "evaluation child: no snippet:", err)
		return 1
	}
	r := evaluate(context.Background(), start.Code, p, *start.Limits)
	if err := p.enc.Encode(message{Done: r}); err != nil {
		return 1
	}
	return 0
}

// pipe is the child's fileSystem: each call asks the parent.
type pipe struct {
	enc *json.Encoder
	dec *json.Decoder
}

func (p *pipe) call(out any, op string, args ...string) error {
	if err := p.enc.Encode(message{Op: op, Args: args}); err != nil {
		return err
	}
	var r reply
	if err := p.dec.Decode(&r); err != nil {
		return err
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	return json.Unmarshal(r.Value, out)
}

func (p *pipe) Read(path string) (s string, err error) {
	return s, p.call(&s, "read", path)
}

func (p *pipe) Write(path, content string) (s string, err error) {
	return s, p.call(&s, "write", path, content)
}

func (p *pipe) List(path string) (es []workspace.Entry, err error) {
	return es, p.call(&es, "ls", path)
}

func (p *pipe) Glob(pattern string) ([]string, bool, error) {
	var c capped[string]
	err := p.call(&c, "glob", pattern)
	return c.Items, c.Capped, err
}

func (p *pipe) Grep(pattern, glob string) ([]workspace.Match, bool, error) {
	var c capped[workspace.Match]
	err := p.call(&c, "grep", pattern, glob)
	return c.Items, c.Capped, err
}

// serve does what the child asks with files.
func serve(m message, files fileSystem) (any, error) {
	arg := func(i int) string {
		if i < len(m.Args) {
			return m.Args[i]
		}
		return ""
	}
	switch m.Op {
	case "read":
		return files.Read(arg(0))
	case "write":
		return files.Write(arg(0), arg(1))
	case "ls":
		return files.List(arg(0))
	case "glob":
		items, c, err := files.Glob(arg(0))
		return capped[string]{items, c}, err
	case "grep":
		items, c, err := files.Grep(arg(0), arg(1))
		return capped[workspace.Match]{items, c}, err
	}
	return nil, fmt.Errorf("unknown operation %q", m.Op)
}

// evaluateInChild runs code in a child process of this binary whose
// address space may grow by at most maxMemory bytes past what it has
// mapped when it is ready, serving its fs builtins with files, and kills
// it when ctx is done. An error is the parent's own failure (the child
// could not start); how the snippet ended is in the run.
func evaluateInChild(ctx context.Context, code string, files fileSystem, lim limits, maxMemory int64) (*run, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("evaluation child: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{childEnv + "=1", "GOTRACEBACK=none"}
	stderr := &head{max: 4 << 10}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("evaluation child: %w", err)
	}
	r, err := talk(cmd.Process.Pid, stdin, stdout, code, files, lim, maxMemory)
	stdin.Close()
	waitErr := cmd.Wait()
	switch {
	case err == nil:
		return r, nil
	case ctx.Err() != nil:
		return &run{Error: "Error: the snippet was stopped: the call's deadline passed"}, nil
	case outOfMemory(stderr.String()):
		return &run{Error: fmt.Sprintf("Error: the snippet ran out of memory: it may use at most %d MiB", maxMemory>>20)}, nil
	case waitErr != nil:
		return &run{Error: fmt.Sprintf("Error: the snippet's process ended without a result (%v): %s", waitErr, firstLine(stderr.String()))}, nil
	}
	return nil, fmt.Errorf("evaluation child: %w", err)
}

// talk speaks the pipe protocol with the child pid, until it sends its
// run.
func talk(pid int, stdin io.Writer, stdout io.Reader, code string, files fileSystem, lim limits, maxMemory int64) (*run, error) {
	enc, dec := json.NewEncoder(stdin), json.NewDecoder(stdout)
	var m message
	if err := dec.Decode(&m); err != nil || m.Op != "ready" {
		return nil, fmt.Errorf("the child did not start: %v", err)
	}
	if err := limitAddressSpace(pid, maxMemory); err != nil {
		return nil, err
	}
	if err := enc.Encode(reply{Code: code, Limits: &lim}); err != nil {
		return nil, err
	}
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		if m.Done != nil {
			return m.Done, nil
		}
		v, err := serve(m, files)
		var r reply
		if err != nil {
			r.Error = err.Error()
		} else if r.Value, err = json.Marshal(v); err != nil {
			return nil, err
		}
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
}

// outOfMemory reports whether a child's stderr says that it died because
// the runtime could not map memory.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// head keeps the first max bytes written to it (where a Go program says
// why it died), and whether more came.
type head struct {
	max int
	buf []byte
	cut bool
}

func (h *head) Write(p []byte) (int, error) {
	n := min(len(p), h.max-len(h.buf))
	h.buf = append(h.buf, p[:n]...)
	h.cut = h.cut || n < len(p)
	return len(p), nil
}

func (h *head) String() string { return string(h.buf) }

// firstLine returns the first line of s that is not blank.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
