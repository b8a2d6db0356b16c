package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// auditFile is the audit's JSON-lines file. It is opened with O_APPEND and
// only this server writes to it. Lines are written whole, a batch at a time;
// when a write fails part-way, the file is truncated back to its last whole
// record. When the file is opened and its last line is not whole (the
// machine crashed while it was written), that partial line is cut off (or
// given its newline, when only that is missing), so that the next record
// starts on a line of its own. The auditor serialises its use.
type auditFile struct {
	f     *os.File
	size  int64 // the length of the whole records
	dirty bool  // written since the last sync
}

func openAuditFile(path string) (*auditFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	size, err := repairTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &auditFile{f: f, size: size}, nil
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

// write appends whole lines.
func (a *auditFile) write(lines []byte) error {
	if a.f == nil {
		return os.ErrClosed
	}
	n, err := a.f.Write(lines)
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
	a.dirty = true
	return nil
}

// sync syncs the file if lines were written since the last sync.
func (a *auditFile) sync() error {
	if !a.dirty || a.f == nil {
		return nil
	}
	a.dirty = false
	return a.f.Sync()
}

// close syncs and closes the file.
func (a *auditFile) close() error {
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
