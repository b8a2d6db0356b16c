package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// readBufferSize is the size of the buffered reader's window. Lines longer
// than this are assembled from several windows, so it does not limit line
// length; it only bounds how much is read from in at a time.
const readBufferSize = 64 << 10

// lineTooLongError reports a line that exceeded the configured maximum. The
// line has already been discarded up to and including its newline.
type lineTooLongError struct {
	limit int
}

// Error returns a message naming the limit that was exceeded.
func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("line exceeds the maximum length of %d bytes", e.limit)
}

// lineReader reads newline-terminated lines of at most max bytes (not
// counting the newline). Longer lines are skipped in fixed-size pieces, so
// memory use stays bounded by max plus the read buffer.
type lineReader struct {
	br  *bufio.Reader
	max int
	err error // sticky error returned once the input is exhausted
}

// newLineReader returns a lineReader over in with the given length limit.
func newLineReader(in io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(in, readBufferSize), max: max}
}

// readLine returns the next line without its trailing newline. The returned
// slice is freshly allocated and owned by the caller. A final line with no
// newline before EOF is returned as a normal line; the following call returns
// io.EOF. An over-long line yields a *lineTooLongError after it has been
// skipped.
func (r *lineReader) readLine() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	var line []byte
	tooLong := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if !tooLong && len(line)+len(chunk) > r.max {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			r.err = err
			if !tooLong && len(line) == 0 {
				return nil, err
			}
		}
		if tooLong {
			return nil, &lineTooLongError{limit: r.max}
		}
		if line == nil {
			line = []byte{}
		}
		return line, nil
	}
}

// buffered reports whether a whole line is buffered already, so that
// readLine returns it without reading from the input.
func (r *lineReader) buffered() bool {
	n := r.br.Buffered()
	if n == 0 || r.err != nil {
		return false
	}
	b, _ := r.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// readResult is one line, or the error that ended reading, handed from the
// reading goroutine to the read loop.
type readResult struct {
	line []byte
	err  error
}

// asyncReader reads lines on its own goroutine, one line per request, so
// that the read loop can stop waiting on a blocked reader when its context
// is cancelled. (A line already buffered whole is read by the read loop
// itself, as reading it cannot block.) It never reads ahead: a line is read only after next asked
// for it.
type asyncReader struct {
	want    chan struct{}
	results chan readResult
}

// newAsyncReader starts the reading goroutine. It exits after reading a
// terminal error or once stop has been called and any read in progress
// returns.
func newAsyncReader(lr *lineReader) *asyncReader {
	a := &asyncReader{
		want:    make(chan struct{}, 1),
		results: make(chan readResult, 1),
	}
	go a.loop(lr)
	return a
}

// loop serves read requests until want is closed or input ends.
func (a *asyncReader) loop(lr *lineReader) {
	for range a.want {
		line, err := lr.readLine()
		a.results <- readResult{line: line, err: err}
		var tooLong *lineTooLongError
		if err != nil && !errors.As(err, &tooLong) {
			return
		}
	}
}

// request asks the reading goroutine for the next line. The result arrives
// on results. It must not be called again before that result was received.
func (a *asyncReader) request() {
	a.want <- struct{}{}
}

// stop tells the reading goroutine to exit once it is idle.
func (a *asyncReader) stop() {
	close(a.want)
}

// errWriterClosed is returned by frameWriter.send after the writer stopped.
var errWriterClosed = errors.New("transport: output writer closed")

// encodeError reports a message that could not be encoded as JSON.
type encodeError struct {
	err error
}

// Error describes the encoding failure.
func (e *encodeError) Error() string {
	return "encode JSON-RPC message: " + e.err.Error()
}

// Unwrap returns the underlying encoding error.
func (e *encodeError) Unwrap() error {
	return e.err
}

// outFrame is one encoded message waiting to be written, with a channel on
// which the writer reports the outcome (nil when nobody waits).
type outFrame struct {
	data    []byte
	written chan error
}

// frameWriter owns out: every line ever written to it is written by the run
// goroutine. Before it writes a frame handed to send, it writes every
// notification already queued in the session's notification channel.
// Because run is the only receiver of that channel and handles one item at
// a time, no notification can be held outside the channel while a response
// is written, so a notification queued before send was called is always
// written before the frame. Frames and notifications that are ready
// together are written with one Write call, whole lines only.
type frameWriter struct {
	out           io.Writer
	logger        *slog.Logger
	notifications <-chan mcp.JSONRPCNotification
	frames        chan outFrame
	stopc         chan struct{}
	done          chan struct{}

	batch   []byte       // the lines of the next Write; run's alone
	waiting []chan error // the senders waiting for frames in batch
}

// maxBatch is how many bytes of lines the writer gathers before a Write.
const maxBatch = 256 << 10

// writtenPool holds the channels on which senders wait for their frames.
var writtenPool = sync.Pool{New: func() any { return make(chan error, 1) }}

// newFrameWriter returns a writer for out that also forwards notifications.
// Call start to begin writing.
func newFrameWriter(out io.Writer, notifications <-chan mcp.JSONRPCNotification, logger *slog.Logger) *frameWriter {
	return &frameWriter{
		out:           out,
		logger:        logger,
		notifications: notifications,
		frames:        make(chan outFrame, 64),
		stopc:         make(chan struct{}),
		done:          make(chan struct{}),
	}
}

// start launches the writing goroutine.
func (w *frameWriter) start() {
	go w.run()
}

// run writes notifications as they arrive and frames as they are sent, until
// stop is called; it then writes what is still queued.
func (w *frameWriter) run() {
	defer close(w.done)
	for {
		select {
		case n := <-w.notifications:
			w.addNotification(n)
		case f := <-w.frames:
			w.addFrame(f)
		case <-w.stopc:
			for {
				w.gather()
				if len(w.batch) == 0 {
					return
				}
				w.write()
			}
		}
		w.gather()
		w.write()
	}
}

// gather adds what else is ready, without waiting.
func (w *frameWriter) gather() {
	for len(w.batch) < maxBatch {
		select {
		case n := <-w.notifications:
			w.addNotification(n)
		case f := <-w.frames:
			w.addFrame(f)
		default:
			return
		}
	}
}

// addFrame adds a frame to the batch, after every notification queued.
func (w *frameWriter) addFrame(f outFrame) {
	w.addQueuedNotifications()
	w.batch = append(append(w.batch, f.data...), '\n')
	if f.written != nil {
		w.waiting = append(w.waiting, f.written)
	}
}

// addQueuedNotifications adds every notification queued.
func (w *frameWriter) addQueuedNotifications() {
	for {
		select {
		case n := <-w.notifications:
			w.addNotification(n)
		default:
			return
		}
	}
}

// addNotification encodes a notification into the batch, logging failures.
func (w *frameWriter) addNotification(n mcp.JSONRPCNotification) {
	data, err := json.Marshal(n)
	if err != nil {
		w.logger.Error("transport: dropping notification that cannot be encoded",
			"method", n.Method, "error", err)
		return
	}
	w.batch = append(append(w.batch, data...), '\n')
}

// write writes the batch in one Write call and tells its frames' senders.
func (w *frameWriter) write() {
	if len(w.batch) == 0 {
		return
	}
	var err error
	if _, werr := w.out.Write(w.batch); werr != nil {
		err = fmt.Errorf("write to stdio output: %w", werr)
		w.logger.Error("transport: writing to stdout failed", "error", err)
	}
	for _, c := range w.waiting {
		c <- err
	}
	clear(w.waiting)
	w.waiting = w.waiting[:0]
	if cap(w.batch) > 4*maxBatch {
		w.batch = nil
	}
	w.batch = w.batch[:0]
}

// post encodes msg and queues it to be written, after every notification
// queued before the call, without waiting for the write (a failed write is
// logged). It returns an *encodeError if msg cannot be encoded and
// errWriterClosed if the writer has stopped; stop writes what was posted
// before it.
func (w *frameWriter) post(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return &encodeError{err: err}
	}
	select {
	case w.frames <- outFrame{data: data}:
		return nil
	case <-w.done:
		return errWriterClosed
	}
}

// send encodes msg and waits until it has been written, after every
// notification queued before the call. It returns an *encodeError if msg
// cannot be encoded and errWriterClosed if the writer has stopped.
func (w *frameWriter) send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return &encodeError{err: err}
	}
	written := writtenPool.Get().(chan error)
	select {
	case w.frames <- outFrame{data: data, written: written}:
	case <-w.done:
		writtenPool.Put(written)
		return errWriterClosed
	}
	select {
	case err = <-written:
	case <-w.done:
		// The writer tells every frame it took before it stops.
		select {
		case err = <-written:
		default:
			return errWriterClosed // never taken: written stays out of the pool
		}
	}
	writtenPool.Put(written)
	return err
}

// stop writes any queued notifications, stops the writing goroutine and
// waits for it to exit. Later sends fail with errWriterClosed.
func (w *frameWriter) stop() {
	close(w.stopc)
	<-w.done
}
