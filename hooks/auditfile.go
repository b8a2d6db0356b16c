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

// auditFile appends audit records to a JSON-lines file.
//
// Each record is written whole, as one line, with one write call on a file
// opened with O_APPEND, under a mutex, before the call's result is
// returned: once written, a record survives a crash of the server. Whether
// it also survives a crash of the machine depends on fsync (see Fsync).
// When a write fails part-way, the file is truncated back to its last whole
// record. When the file is opened and its last line is not whole (the
// machine crashed while it was written), that partial line is cut off (or
// given its newline, when only that is missing), so that the next record
// starts on a line of its own. One server writes to a
// file at a time.
type auditFile struct {
	mu     sync.Mutex
	f      *os.File
	size   int64 // the length of the whole records
	fsync  Fsync
	dirty  bool
	logger *slog.Logger

	stop chan struct{}
	done chan struct{}
}

// linePool holds buffers for encoding records.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// syncInterval is how often FsyncInterval syncs.
const syncInterval = time.Second

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
	a := &auditFile{f: f, size: size, fsync: fsync, logger: logger}
	if fsync == FsyncInterval {
		a.stop, a.done = make(chan struct{}), make(chan struct{})
		go a.syncLoop()
	}
	return a, nil
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

// append writes rec as one line; value is the encoding of rec.Value, or
// nil when it could not be encoded.
func (a *auditFile) append(rec *AuditRecord, value []byte) error {
	if rec.Value != nil && value == nil {
		value = appendString(nil, "<value not marshalable>")
	}
	bp := linePool.Get().(*[]byte)
	line := appendRecord((*bp)[:0], rec, value)
	line = append(line, '\n')
	defer func() {
		if cap(line) <= 64<<10 {
			*bp = line
			linePool.Put(bp)
		}
	}()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return os.ErrClosed
	}
	n, err := a.f.Write(line)
	if err != nil {
		if n > 0 {
			// Never leave a partial record for the next to be glued to.
			if terr := a.f.Truncate(a.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		return err
	}
	a.size += int64(n)
	if a.fsync == FsyncAlways {
		return a.f.Sync()
	}
	a.dirty = true
	return nil
}

func (a *auditFile) syncLoop() {
	defer close(a.done)
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.mu.Lock()
			if a.dirty && a.f != nil {
				if err := a.f.Sync(); err != nil {
					a.logger.Error("syncing the audit file failed", "err", err)
				}
				a.dirty = false
			}
			a.mu.Unlock()
		}
	}
}

// Close syncs and closes the file.
func (a *auditFile) Close() error {
	if a.stop != nil {
		close(a.stop)
		<-a.done
		a.stop = nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := errors.Join(a.f.Sync(), a.f.Close())
	a.f = nil
	return err
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
