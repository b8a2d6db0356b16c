package workspace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// opened is a file a walk opened for a search.
type opened interface {
	// read returns the file's content and closes the file: read into
	// *buf, grown as needed, or not copied (a memory tree's); a file
	// larger than max bytes is errTooLarge (max <= 0: no limit).
	read(buf *[]byte, max int64) ([]byte, error)
}

// osFile is an opened file of the disk, with the size it had when opened.
type osFile struct {
	f    *os.File
	size int64
}

func (o osFile) read(into *[]byte, max int64) ([]byte, error) {
	defer o.f.Close()
	return readSized(into, o.size, max, o.f.Read)
}

// readSized reads a file of size bytes (when it was opened) with read into
// *buf, grown as needed; a file larger than max bytes is errTooLarge (max
// <= 0: no limit).
func readSized(into *[]byte, size, max int64, read func([]byte) (int, error)) ([]byte, error) {
	if max > 0 && size > max {
		return nil, errTooLarge
	}
	buf := *into
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1)
	}
	buf = buf[:0]
	defer func() { *into = buf[:0] }()
	for {
		n, err := read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF, err == nil && n == 0:
			return buf, nil
		case err != nil:
			return nil, err
		case int64(len(buf)) == size && len(buf) < cap(buf):
			// What the file held when it was opened; one more read would
			// only say so.
			return buf, nil
		case max > 0 && int64(len(buf)) > max:
			return nil, errTooLarge
		case len(buf) == cap(buf):
			buf = append(buf, 0)[:len(buf)] // it grew since it was opened
		}
	}
}

// memFile is an opened file of a memory tree: its content, not copied.
type memFile struct{ c *content }

func (m memFile) read(_ *[]byte, max int64) ([]byte, error) {
	data, err := m.c.bytes()
	if err == nil && max > 0 && int64(len(data)) > max {
		return nil, errTooLarge
	}
	return data, err
}

// searchJob is one file of a search, from its walk through a worker to
// the caller.
type searchJob struct {
	path    string
	open    func() (opened, error)
	release func() // nil: nothing to release
	done    chan struct{}
	res     fileScan
}

// searchCut is how a search stopped early: the deadline or a
// cancellation (err), before the file at path was searched.
type searchCut struct {
	path string
	err  error
}

func (c *searchCut) Error() string { return "search stopped at " + c.path + ": " + c.err.Error() }
func (c *searchCut) Unwrap() error { return c.err }

// searchWindow is how many files a search has found ahead of the one the
// caller takes next: it bounds the directories held open and the results
// held.
const searchWindow = 64

// searchFiles searches the files under dir that keep accepts (the ignore
// rules apply, as for walk): the walk finds them in path order, a worker
// per processor opens and reads each into a buffer of its own and runs
// scan on its content, and take gets each result in path order. It returns take's
// error (errStop ends the search without one), the walk's, or, when ctx
// ends first, a *searchCut naming the first file not taken.
func (w *Workspace) searchFiles(ctx context.Context, dir string, maxFile int64, keep func(path string) bool,
	scan func(st *scanState, path string, data []byte) fileScan, take func(j *searchJob) error) error {
	order := make(chan *searchJob, searchWindow)
	work := make(chan *searchJob, searchWindow)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var walkErr error
	stoppedAt := "" // the file the walk stopped at when ctx ended
	wg.Go(func() {
		defer close(work)
		defer close(order)
		walkErr = w.scan(dir, func(in Info) error {
			if ctx.Err() != nil {
				stoppedAt = in.Path
				return errStop
			}
			if !keep(in.Path) || in.open == nil {
				return nil
			}
			j := &searchJob{path: in.Path, open: in.open, done: make(chan struct{})}
			if in.retain != nil {
				j.release = in.retain()
			}
			select {
			case order <- j:
			case <-quit:
				if j.release != nil {
					j.release()
				}
				return errStop
			}
			work <- j
			return nil
		})
	})
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			var st scanState
			for j := range work {
				j.res.skipped = true
				select {
				case <-quit:
				default:
					if f, err := j.open(); err == nil {
						data, err := f.read(&st.buf, maxFile)
						if data, text := searchable(data); err == nil && text {
							j.res = scan(&st, j.path, data)
						}
						st.release()
					}
				}
				if j.release != nil {
					j.release()
				}
				close(j.done)
			}
		})
	}
	err := func() error {
		for j := range order {
			select {
			case <-j.done:
			case <-ctx.Done():
				return &searchCut{path: j.path, err: ctx.Err()}
			}
			if err := take(j); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil && stoppedAt != "" {
			return &searchCut{path: stoppedAt, err: err}
		}
		return walkErr
	}()
	close(quit)
	for range order {
		// Let the walk see quit.
	}
	wg.Wait()
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// binaryWindow is where a search looks for a NUL byte, the mark of a
// binary file: ripgrep's first read of a file.
const binaryWindow = 64 << 10

// searchable returns what a search looks at in a file's content, and
// whether it is text, as ripgrep decides: a NUL byte in the first 64 KiB
// makes a binary file, which is skipped; otherwise the content up to its
// first NUL byte, if any, where ripgrep stops. Text that is not valid
// UTF-8 is searched (its lines are shown with U+FFFD in place of what is
// not).
func searchable(data []byte) ([]byte, bool) {
	i := bytes.IndexByte(data, 0)
	switch {
	case i < 0:
		return data, true
	case i < binaryWindow:
		return nil, false
	}
	return data[:i], true
}

// searchContext returns the context a search runs under: the call's,
// ending somewhat before the call's deadline, so that the search has the
// time to answer with what it found before the deadline fails the call.
func searchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(time.Until(d)/4, 250*time.Millisecond)
	return context.WithDeadline(ctx, d.Add(-margin))
}
