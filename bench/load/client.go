package main

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
	"strconv"
	"sync"
	"time"
)

// protocolVersion is the MCP protocol version sent in initialize.
const protocolVersion = "2025-11-25"

// exitGrace is how long a server may take to exit after its stdin is closed
// before its process group is killed.
const exitGrace = 2 * time.Second

// errClosed is returned for calls that cannot complete because the server
// stopped writing (it exited or closed stdout).
var errClosed = errors.New("server closed its stdout")

// errCallTimeout is returned for a call that got no response within the
// per-call timeout.
var errCallTimeout = errors.New("call timed out")

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// response is what the reader hands to the caller waiting on a request id.
type response struct {
	result json.RawMessage
	err    *rpcError
	at     time.Time
	closed bool // no response will come: the server stopped writing
}

// incoming is the subset of a JSON-RPC message the reader decodes.
type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// tailBuffer keeps the last bytes written to it, to quote a server's stderr
// in error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// Write records p, keeping only the last max bytes.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns the recorded tail.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// session is one spawned server process spoken to over newline-delimited
// JSON-RPC on its stdin and stdout. One goroutine writes requests, another
// reads messages and hands each response to the caller waiting on its id.
type session struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the server's stdin
	stdout *os.File // our end of the server's stdout
	out    chan []byte
	stderr *tailBuffer

	mu      sync.Mutex
	pending map[int64]chan response
	nextID  int64
	closed  bool // the reader has stopped; no response will arrive

	readerDone chan struct{}
	writerDone chan struct{}
	exited     chan struct{} // closed once the process has been reaped
	waitErr    error         // the result of Wait, set before exited is closed
	stopOnce   sync.Once
	stopWriter chan struct{}
}

// start spawns argv and starts its reader and writer goroutines. The process
// is killed when ctx is done. The caller must call close on every path.
// Server stderr goes to stderr (if not nil) and is also kept for errors.
func start(ctx context.Context, argv []string, stderr io.Writer) (*session, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty server command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return killTree(cmd) }
	cmd.WaitDelay = exitGrace
	tail := &tailBuffer{max: 4096}
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, tail)
	} else {
		cmd.Stderr = tail
	}
	// Plain pipes rather than StdinPipe/StdoutPipe, so that Wait never
	// closes our ends under the reader and writer.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin = inR
	cmd.Stdout = outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %q: %w", argv[0], err)
	}
	s := &session{
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		out:        make(chan []byte, 1024),
		stderr:     tail,
		pending:    make(map[int64]chan response),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
		exited:     make(chan struct{}),
		stopWriter: make(chan struct{}),
	}
	go s.writeLoop()
	go s.readLoop(outR)
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// writeLoop writes queued messages to the server's stdin, flushing whenever
// the queue is momentarily empty so that requests are batched under load
// but never held back.
func (s *session) writeLoop() {
	defer close(s.writerDone)
	w := bufio.NewWriterSize(s.stdin, 64<<10)
	for {
		var msg []byte
		select {
		case msg = <-s.out:
		case <-s.stopWriter:
			// Send what is already queued, then stop.
			for {
				select {
				case msg = <-s.out:
					if _, err := w.Write(msg); err != nil {
						return
					}
				default:
					_ = w.Flush()
					return
				}
			}
		}
		if _, err := w.Write(msg); err != nil {
			return
		}
	drain:
		for {
			select {
			case msg = <-s.out:
				if _, err := w.Write(msg); err != nil {
					return
				}
			default:
				break drain
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// readLoop reads newline-delimited messages from the server, delivers
// responses by id, ignores notifications and answers server-to-client
// requests with "method not found". When stdout ends it fails every pending
// call.
func (s *session) readLoop(stdout io.Reader) {
	defer close(s.readerDone)
	defer s.failPending()
	r := bufio.NewReaderSize(stdout, 256<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: collect the rest of it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			s.dispatch(line)
		}
		if err != nil {
			return
		}
	}
}

// dispatch handles one message from the server.
func (s *session) dispatch(line []byte) {
	var m incoming
	if err := json.Unmarshal(line, &m); err != nil {
		return // not JSON-RPC; ignore it like a stray log line
	}
	if m.Method != "" {
		if len(m.ID) > 0 && string(m.ID) != "null" {
			// A request from the server: this client supports none.
			// Sent from another goroutine: the reader must never wait on
			// the writer, which may be waiting on the server, which may be
			// waiting for the reader to drain its stdout.
			reply := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
			go s.send(reply)
		}
		return // notification
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return // not one of ours
	}
	now := time.Now()
	s.mu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok {
		ch <- response{result: m.Result, err: m.Error, at: now}
	}
}

// failPending marks the session closed and fails every waiting call.
func (s *session) failPending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, ch := range s.pending {
		delete(s.pending, id)
		ch <- response{closed: true}
	}
}

// send queues a message for the writer; it drops the message if the writer
// has stopped.
func (s *session) send(msg []byte) {
	select {
	case s.out <- msg:
	case <-s.writerDone:
	case <-s.readerDone:
	}
}

// register reserves a new request id whose response will be delivered on ch,
// which must have room for one value.
func (s *session) register(ch chan response) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, s.closedError()
	}
	s.nextID++
	s.pending[s.nextID] = ch
	return s.nextID, nil
}

// forget drops a pending id after a timeout. It reports whether the id was
// still pending; if not, a response has been or is being delivered on its
// channel and the caller must receive it before reusing the channel.
func (s *session) forget(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	return ok
}

// closedError describes why no response can arrive, quoting server stderr.
// It gives the server a moment to exit first, so that the stderr it wrote
// before exiting has been collected.
func (s *session) closedError() error {
	err := errClosed
	select {
	case <-s.exited:
		if s.waitErr != nil {
			err = fmt.Errorf("%w (%v)", errClosed, s.waitErr)
		} else {
			err = fmt.Errorf("%w (it exited)", errClosed)
		}
	case <-time.After(time.Second):
	}
	if tail := s.stderr.String(); tail != "" {
		return fmt.Errorf("%w; server stderr:\n%s", err, tail)
	}
	return err
}

// call sends one request built by build(id) and waits for its response on
// ch, at most timeout. timer is the caller's reusable timer (stopped).
func (s *session) call(ch chan response, timer *time.Timer, timeout time.Duration, build func(id int64) []byte) (response, error) {
	id, err := s.register(ch)
	if err != nil {
		return response{}, err
	}
	s.send(build(id))
	timer.Reset(timeout)
	select {
	case r := <-ch:
		timer.Stop()
		if r.closed {
			return r, s.closedError()
		}
		return r, nil
	case <-timer.C:
		if !s.forget(id) {
			<-ch // delivered concurrently: drain so ch can be reused
		}
		return response{}, errCallTimeout
	}
}

// initialize performs the MCP handshake: the initialize request, then the
// notifications/initialized notification. It returns when the initialize
// response has arrived.
func (s *session) initialize(timeout time.Duration) (time.Time, error) {
	ch := make(chan response, 1)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	r, err := s.call(ch, timer, timeout, func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"wink-bench-load","version":"0.1.0"}}}`+"\n", id, protocolVersion)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("initialize: %w", err)
	}
	if r.err != nil {
		return time.Time{}, fmt.Errorf("initialize: error %d: %s", r.err.Code, r.err.Message)
	}
	s.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	return r.at, nil
}

// close ends the session: it sends what is queued, closes the server's
// stdin, gives the server exitGrace to exit, then kills its process group.
// It is safe to call more than once and returns once the process has been
// reaped and the reader and writer have stopped.
func (s *session) close() {
	s.stopOnce.Do(func() {
		close(s.stopWriter)
		select {
		case <-s.writerDone:
		case <-time.After(exitGrace):
			// The server is not reading its stdin; it is killed below.
		}
		_ = s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(exitGrace):
		}
		// Kill the whole group even if the leader exited, so that nothing
		// it spawned outlives the measurement.
		_ = killTree(s.cmd)
		<-s.exited
		_ = s.stdout.Close()
		<-s.readerDone
		<-s.writerDone
	})
}
