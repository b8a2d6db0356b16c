package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// auditFile is the audit's JSON-lines file: a buffered writer over a file
// opened with O_APPEND, which only this server writes to. slog's handler
// writes each line whole, with one Write; the buffer is flushed before a
// line that does not fit, so the file only ever receives whole lines. A
// ticker flushes the buffer once a second, and syncs the file then with
// FsyncInterval; with FsyncAlways every line is flushed and synced as it
// is written. When a write fails part-way, the file is cut back to its
// last whole line and the lines that were buffered are dropped (the error
// is logged). When the file is opened and its last line is not whole (the
// machine crashed while it was written), that partial line is cut off (or
// given its newline, when only that is missing), so that the next record
// starts on a line of its own.
type auditFile struct {
	logger *slog.Logger
	fsync  Fsync
	stop   chan struct{} // closed by close, to stop the ticker

	mu    sync.Mutex
	out   appendFile    // under buf; out.f is nil once closed
	buf   *bufio.Writer // over out
	dirty bool          // written since the last sync
}

const (
	// auditBuffer is the size of the audit file's buffer.
	auditBuffer = 64 << 10
	// auditTick is how often the buffer is flushed (and, with
	// FsyncInterval, the file synced).
	auditTick = time.Second
)

func openAuditFile(path string, fsync Fsync, logger *slog.Logger) (*auditFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	size, err := repairTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a := &auditFile{logger: logger, fsync: fsync, stop: make(chan struct{}), out: appendFile{f, size}}
	a.buf = bufio.NewWriterSize(&a.out, auditBuffer)
	go a.tick()
	return a, nil
}

// tick flushes the buffer every auditTick until close.
func (a *auditFile) tick() {
	t := time.NewTicker(auditTick)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.mu.Lock()
			var err error
			if a.out.f != nil {
				err = a.flush(a.fsync == FsyncInterval)
			}
			a.mu.Unlock()
			if err != nil {
				a.logger.Error("writing the audit file failed", "err", err)
			}
		}
	}
}

// Write buffers one whole line, flushing the buffer first when the line
// does not fit, and with FsyncAlways flushes and syncs it.
func (a *auditFile) Write(line []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out.f == nil {
		return 0, os.ErrClosed
	}
	if len(line) > a.buf.Available() {
		if err := a.flush(false); err != nil {
			return 0, err
		}
	}
	n, err := a.buf.Write(line) // a line longer than the buffer goes straight to the file
	if err != nil {
		a.buf.Reset(&a.out)
		return 0, err
	}
	a.dirty = true
	if a.fsync == FsyncAlways {
		return n, a.flush(true)
	}
	return n, nil
}

// flush writes the buffered lines to the file and, when sync is set and
// lines were written since the last sync, syncs it. The lines of a failed
// write are dropped. a.mu is held.
func (a *auditFile) flush(sync bool) error {
	if err := a.buf.Flush(); err != nil {
		a.buf.Reset(&a.out)
		return err
	}
	if sync && a.dirty {
		a.dirty = false
		return a.out.f.Sync()
	}
	return nil
}

// close stops the ticker, writes the buffered lines, syncs and closes the
// file. Lines written after close fail with os.ErrClosed.
func (a *auditFile) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out.f == nil {
		return nil
	}
	close(a.stop)
	err := errors.Join(a.flush(false), a.out.f.Sync(), a.out.f.Close())
	a.out.f = nil
	if err != nil {
		return fmt.Errorf("closing the audit file: %w", err)
	}
	return nil
}

// appendFile is the file under the buffer. A write that fails part-way is
// cut back off, so that no line is ever glued to a partial one.
type appendFile struct {
	f    *os.File
	size int64 // the length of the whole lines in f
}

func (w *appendFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		if n > 0 {
			err = errors.Join(err, w.f.Truncate(w.size))
		}
		return n, err
	}
	w.size += int64(n)
	return n, nil
}

// repairTail cuts a partial last line off f and returns f's new size.
func repairTail(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	// Find the last newline, reading backwards in blocks.
	buf := make([]byte, 64<<10)
	end := size
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if end == size {
		return size, nil
	}
	// A last line that holds a whole record lacks only its newline: keep
	// it, as ReadAudit does.
	tail := make([]byte, size-end)
	if _, err := f.ReadAt(tail, end); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if json.Valid(tail) {
		if _, err := f.Write([]byte("\n")); err != nil {
			return 0, err
		}
		return size + 1, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	return end, nil
}

// ReadAudit reads the records of an audit file. A last line that is not a
// whole record (the machine crashed while it was written) is skipped; any
// other line that is not a record is an error naming its line.
func ReadAudit(r io.Reader) ([]AuditRecord, error) {
	br := bufio.NewReader(r)
	var out []AuditRecord
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return out, err
		}
		last := errors.Is(err, io.EOF)
		if len(bytes.TrimSpace(line)) > 0 {
			var rec AuditRecord
			if uerr := json.Unmarshal(line, &rec); uerr != nil {
				if last {
					return out, nil // torn: skip it
				}
				return out, fmt.Errorf("audit line %d: %w", n, uerr)
			}
			out = append(out, rec)
		}
		if last {
			return out, nil
		}
	}
}

// ReadAuditFile reads the audit file at path (see ReadAudit).
func ReadAuditFile(path string) ([]AuditRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAudit(f)
}
