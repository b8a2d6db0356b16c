package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

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

// stdioWriter owns out: every line written to it is written whole, with one
// Write call, by the writer's run goroutine. That goroutine is also the only
// receiver of the session's notification channel, on which mcp-go queues
// the notifications a handler sends, and before it writes a frame handed to
// post it writes every notification queued. So a notification sent before
// a frame was posted (the progress of a call whose response this is) is
// written before that frame. (A second goroutine forwarding notifications
// could hold one it has received but not yet written while a response
// overtakes it; mcp-go's own stdio server does exactly that.)
type stdioWriter struct {
	out           io.Writer
	logger        *slog.Logger
	notifications <-chan mcp.JSONRPCNotification
	frames        chan []byte
	stopc         chan struct{}
	done          chan struct{}
}

// newStdioWriter starts a writer for out that also writes the notifications
// queued on notifications.
func newStdioWriter(out io.Writer, notifications <-chan mcp.JSONRPCNotification, logger *slog.Logger) *stdioWriter {
	w := &stdioWriter{
		out:           out,
		logger:        logger,
		notifications: notifications,
		frames:        make(chan []byte),
		stopc:         make(chan struct{}),
		done:          make(chan struct{}),
	}
	go w.run()
	return w
}

// run writes notifications as they are queued and frames as they are
// posted, until stop is called; it then writes the notifications still
// queued.
func (w *stdioWriter) run() {
	defer close(w.done)
	for {
		select {
		case n := <-w.notifications:
			w.writeNotification(n)
		case f := <-w.frames:
			w.writeQueued()
			w.write(f)
		case <-w.stopc:
			w.writeQueued()
			return
		}
	}
}

// writeQueued writes every notification queued.
func (w *stdioWriter) writeQueued() {
	for {
		select {
		case n := <-w.notifications:
			w.writeNotification(n)
		default:
			return
		}
	}
}

// writeNotification writes a notification, logging one that cannot be
// encoded.
func (w *stdioWriter) writeNotification(n mcp.JSONRPCNotification) {
	data, err := json.Marshal(n)
	if err != nil {
		w.logger.Error("transport: dropping notification that cannot be encoded",
			"method", n.Method, "error", err)
		return
	}
	w.write(data)
}

// write writes data and a newline with one Write call.
func (w *stdioWriter) write(data []byte) {
	if _, err := w.out.Write(append(data, '\n')); err != nil {
		w.logger.Error("transport: writing to stdio output failed", "error", err)
	}
}

// post encodes msg and hands it to the writer, to be written after every
// notification queued before the call. It returns an *encodeError if msg
// cannot be encoded and errSessionClosed if the writer has stopped. A
// failed write is logged, not returned.
func (w *stdioWriter) post(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return &encodeError{err: err}
	}
	select {
	case w.frames <- data:
		return nil
	case <-w.done:
		return errSessionClosed
	}
}

// stop writes the notifications still queued and stops the writer. Later
// posts fail with errSessionClosed.
func (w *stdioWriter) stop() {
	close(w.stopc)
	<-w.done
}
