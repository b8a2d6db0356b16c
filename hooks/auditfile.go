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

// auditFile is the audit's JSON-lines file, opened with O_APPEND, which
// only this server writes to. slog's handler writes each line whole, with
// one Write, which hands it to the operating system (write(2)) before the
// call is answered: a kill of the server loses no line of an answered
// call. What a crash of the machine loses depends on fsync: with
// FsyncAlways the auditor syncs the file after each line, before the call
// is answered; with FsyncInterval a ticker syncs it once a second; with
// FsyncNever only close does. A sync covers every line written before it
// began, and syncs run one at a time, outside the lock lines are written
// under: calls that wait for a sync together are answered after it, with
// no sync of their own. When a write fails part-way, the file is cut back
// to its last whole line (the error is logged). When the file is opened
// and its last line is not whole (the server or the machine died while it
// was written), that partial line is cut off (or given its newline, when
// only that is missing), so that the next record starts on a line of its
// own.
type auditFile struct {
	fsync  Fsync
	logger *slog.Logger
	stop   chan struct{} // closed by close, to stop the ticker

	syncMu sync.Mutex // held by a sync, and by close
	synced int64      // how many lines are synced; under syncMu

	mu      sync.Mutex
	out     appendFile // out.f is nil once closed
	written int64      // how many lines are written
}

// auditTick is how often the file is synced with FsyncInterval.
const auditTick = time.Second

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
	a := &auditFile{fsync: fsync, logger: logger, stop: make(chan struct{}), out: appendFile{f, size}}
	if fsync == FsyncInterval {
		go a.tick()
	}
	return a, nil
}

// tick syncs the file every auditTick until close.
func (a *auditFile) tick() {
	t := time.NewTicker(auditTick)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			if err := a.sync(); err != nil {
				a.logger.Error("syncing the audit file failed", "err", err)
			}
		}
	}
}

// Write writes one whole line to the file.
func (a *auditFile) Write(line []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out.f == nil {
		return 0, os.ErrClosed
	}
	n, err := a.out.Write(line)
	if err == nil {
		a.written++
	}
	return n, err
}

// sync syncs the lines written so far, unless they are synced already or
// the file is closed (close synced them).
func (a *auditFile) sync() error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.mu.Lock()
	f, written := a.out.f, a.written
	a.mu.Unlock()
	if f == nil || a.synced == written {
		return nil
	}
	if err := f.Sync(); err != nil {
		return err
	}
	a.synced = written
	return nil
}

// close stops the ticker, syncs and closes the file. Lines written after
// close fail with os.ErrClosed.
func (a *auditFile) close() error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.mu.Lock()
	f := a.out.f
	a.out.f = nil
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	close(a.stop)
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("closing the audit file: %w", err)
	}
	return nil
}

// appendFile is the file the lines are written to. A write that fails
// part-way is cut back off, so that no line is ever glued to a partial
// one.
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
