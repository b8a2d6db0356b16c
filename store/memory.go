package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/blobname"
)

// Memory is a Store in process memory. It keeps the same contract as the
// JetStream store, including revisions drawn from one sequence for heads
// and blobs, content-addressed and located (a located blob is kept under
// its revision), and loses everything when the process ends.
type Memory struct {
	retention int

	mu       sync.Mutex
	closed   bool
	seq      uint64
	heads    map[string]memHead
	blobs    map[string]map[string]memBlob
	data     map[string]map[uint64]memData // located blobs, by session, then revision
	logs     map[string][][]byte
	tasks    map[string]map[string]memTask // by owner, then id
	watchers map[*memWatcher]struct{}
}

type memTask struct {
	data    []byte
	rev     uint64
	expires time.Time
}

type memHead struct {
	data []byte
	rev  uint64
	time time.Time
}

type memBlob struct {
	data []byte
	rev  uint64
}

type memData struct {
	hash string
	data []byte
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store. Of opts it uses LogRetention.
func NewMemory(opts Options) *Memory {
	return &Memory{
		retention: opts.withDefaults().LogRetention,
		heads:     map[string]memHead{},
		blobs:     map[string]map[string]memBlob{},
		data:      map[string]map[uint64]memData{},
		logs:      map[string][][]byte{},
		tasks:     map[string]map[string]memTask{},
		watchers:  map[*memWatcher]struct{}{},
	}
}

// begin checks the store is open and the context alive, and locks the
// store; the caller unlocks it.
func (m *Memory) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("store: closed: %w", ErrUnavailable)
	}
	return nil
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, session string, head []byte) (uint64, error) {
	if err := checkCommit(session, head, nil); err != nil {
		return 0, err
	}
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if _, ok := m.heads[session]; ok {
		return 0, fmt.Errorf("store: create %s: %w", session, ErrExists)
	}
	return m.putHead(session, head), nil
}

// putHead stores a head under the next revision and notifies watchers. The
// store is locked.
func (m *Memory) putHead(session string, head []byte) uint64 {
	m.seq++
	m.heads[session] = memHead{data: bytes.Clone(head), rev: m.seq, time: time.Now()}
	m.notify(Change{Session: session, Rev: m.seq})
	return m.seq
}

// Load implements Store.
func (m *Memory) Load(ctx context.Context, session string) (Head, error) {
	if err := checkSession(session); err != nil {
		return Head{}, err
	}
	if err := m.begin(ctx); err != nil {
		return Head{}, err
	}
	defer m.mu.Unlock()
	h, ok := m.heads[session]
	if !ok {
		return Head{}, fmt.Errorf("store: load %s: %w", session, ErrNotFound)
	}
	return Head{Data: bytes.Clone(h.data), Rev: h.rev, Time: h.time}, nil
}

// Heads implements Store.
func (m *Memory) Heads(ctx context.Context) ([]SessionHead, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]SessionHead, 0, len(m.heads))
	for name, h := range m.heads {
		out = append(out, SessionHead{Session: name, Head: Head{Data: bytes.Clone(h.data), Rev: h.rev, Time: h.time}})
	}
	return out, nil
}

// Commit implements Store. As in the JetStream store, the blobs are
// written before the head's revision is checked, so a commit that loses
// the race leaves them as garbage for Sweep.
func (m *Memory) Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error) {
	if err := checkCommit(session, head, blobs); err != nil {
		return 0, err
	}
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	h, ok := m.heads[session]
	if !ok {
		// What PutData stored under the name since the session was
		// deleted belongs to the session as it was.
		delete(m.data, session)
		return 0, fmt.Errorf("store: commit %s: %w", session, ErrNotFound)
	}
	if len(blobs) > 0 && m.blobs[session] == nil {
		m.blobs[session] = map[string]memBlob{}
	}
	for k, b := range blobs {
		m.seq++
		m.blobs[session][k] = memBlob{data: bytes.Clone(b), rev: m.seq}
	}
	if h.rev != rev {
		return 0, fmt.Errorf("store: commit %s at %d, head at %d: %w", session, rev, h.rev, ErrConflict)
	}
	return m.putHead(session, head), nil
}

// PutData implements Store.
func (m *Memory) PutData(ctx context.Context, session string, contents [][]byte) ([]string, error) {
	if err := checkData(session, contents); err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if len(contents) > 0 && m.data[session] == nil {
		m.data[session] = map[uint64]memData{}
	}
	names := make([]string, len(contents))
	for i, c := range contents {
		m.seq++
		h := Hash(c)
		m.data[session][m.seq] = memData{hash: h, data: bytes.Clone(c)}
		names[i] = blobname.Located(h, m.seq)
	}
	return names, nil
}

// Blob implements Store.
func (m *Memory) Blob(ctx context.Context, session, name string) ([]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	b, _, ok := m.lookup(session, name)
	if !ok {
		return nil, fmt.Errorf("store: blob %s/%s: %w", session, name, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// Remove implements Store.
func (m *Memory) Remove(ctx context.Context, session string, rev uint64, names []string) (int, error) {
	if err := checkRemove(session, names); err != nil {
		return 0, err
	}
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	for _, n := range names {
		m.drop(session, n, rev)
	}
	return len(names), nil
}

// lookup returns the content of the blob of session named name, and
// whether it is located. The caller holds m.mu.
func (m *Memory) lookup(session, name string) (data []byte, located, ok bool) {
	h, seq, _ := blobname.Split(name)
	if seq == 0 {
		b, ok := m.blobs[session][h]
		return b.data, false, ok
	}
	d, ok := m.data[session][seq]
	return d.data, true, ok && d.hash == h
}

// drop removes the blob of session named name if it was written before
// rev, and reports whether it did. The caller holds m.mu.
func (m *Memory) drop(session, name string, rev uint64) bool {
	h, seq, _ := blobname.Split(name)
	if seq != 0 {
		_, ok := m.data[session][seq]
		if ok = ok && seq < rev; ok {
			delete(m.data[session], seq)
		}
		return ok
	}
	b, ok := m.blobs[session][h]
	if ok = ok && b.rev < rev; ok {
		delete(m.blobs[session], h)
	}
	return ok
}

// Sweep implements Store. live is called without the store locked.
func (m *Memory) Sweep(ctx context.Context, session string, rev uint64, live func(name string) bool) (Swept, error) {
	if err := checkSession(session); err != nil {
		return Swept{}, err
	}
	if err := m.begin(ctx); err != nil {
		return Swept{}, err
	}
	var old []string
	for k, b := range m.blobs[session] {
		if b.rev < rev {
			old = append(old, k)
		}
	}
	for seq, d := range m.data[session] {
		if seq < rev {
			old = append(old, blobname.Located(d.hash, seq))
		}
	}
	m.mu.Unlock()

	var dead, kept []string
	for _, k := range old {
		if live(k) {
			kept = append(kept, k)
		} else {
			dead = append(dead, k)
		}
	}

	if err := m.begin(ctx); err != nil {
		return Swept{}, err
	}
	defer m.mu.Unlock()
	var sw Swept
	for _, k := range dead {
		if m.drop(session, k, rev) {
			sw.Removed++
		}
	}
	for _, k := range kept {
		if b, located, ok := m.lookup(session, k); ok {
			sw.Kept++
			if !located {
				sw.KeptBytes += int64(len(b)) // what the JetStream store writes again
			}
		}
	}
	return sw, nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.heads[session]; !ok {
		return fmt.Errorf("store: delete %s: %w", session, ErrNotFound)
	}
	m.remove(session)
	return nil
}

// remove deletes a session and notifies watchers. The store is locked.
func (m *Memory) remove(session string) {
	delete(m.heads, session)
	delete(m.blobs, session)
	delete(m.data, session)
	delete(m.logs, session)
	m.notify(Change{Session: session})
}

// Expire implements Store.
func (m *Memory) Expire(ctx context.Context, before time.Time) (int, error) {
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for s, h := range m.heads {
		if h.time.Before(before) {
			m.remove(s)
			n++
		}
	}
	return n, nil
}

// AppendLog implements Store.
func (m *Memory) AppendLog(ctx context.Context, session string, entries ...[]byte) error {
	if err := checkLog(session, entries); err != nil {
		return err
	}
	if err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	l := m.logs[session]
	for _, e := range entries {
		l = append(l, bytes.Clone(e))
	}
	if len(l) > m.retention {
		l = append(l[:0:0], l[len(l)-m.retention:]...)
	}
	m.logs[session] = l
	return nil
}

// ReadLog implements Store.
func (m *Memory) ReadLog(ctx context.Context, session string, n int) ([][]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	l := m.logs[session]
	l = l[max(0, len(l)-n):]
	out := make([][]byte, len(l))
	for i, e := range l {
		out[i] = bytes.Clone(e)
	}
	return out, nil
}

// Watch implements Store. Changes queue without bound for a slow reader, so
// that commits never wait for a watcher.
func (m *Memory) Watch(ctx context.Context) (<-chan Change, error) {
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	w := &memWatcher{wake: make(chan struct{}, 1), stop: make(chan struct{})}
	m.watchers[w] = struct{}{}
	out := make(chan Change)
	go func() {
		defer close(out)
		defer func() {
			m.mu.Lock()
			delete(m.watchers, w)
			m.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.stop:
				return
			case <-w.wake:
			}
			for _, c := range w.take() {
				select {
				case out <- c:
				case <-ctx.Done():
					return
				case <-w.stop:
					return
				}
			}
		}
	}()
	return out, nil
}

// notify queues a change for every watcher. The store is locked.
func (m *Memory) notify(c Change) {
	for w := range m.watchers {
		w.mu.Lock()
		w.queue = append(w.queue, c)
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// memWatcher is the queue of one Watch.
type memWatcher struct {
	mu    sync.Mutex
	queue []Change
	wake  chan struct{}
	stop  chan struct{}
}

// take empties the queue and returns what it held.
func (w *memWatcher) take() []Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q
}

// PutTask implements Store.
func (m *Memory) PutTask(ctx context.Context, owner, id string, rev uint64, record []byte, keep time.Duration) (uint64, error) {
	if err := checkTask(owner, id); err != nil {
		return 0, err
	}
	if err := checkValue("task record", record); err != nil {
		return 0, err
	}
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	for other := range m.tasks[owner] {
		m.task(owner, other) // deletes the expired
	}
	cur, _ := m.task(owner, id)
	if cur.rev != rev {
		return 0, fmt.Errorf("store: task %s at %d, record at %d: %w", id, rev, cur.rev, ErrConflict)
	}
	if m.tasks[owner] == nil {
		m.tasks[owner] = map[string]memTask{}
	}
	m.seq++
	m.tasks[owner][id] = memTask{data: bytes.Clone(record), rev: m.seq, expires: time.Now().Add(max(keep, minKeep))}
	return m.seq, nil
}

// task returns the record of a task unless it has expired, which it
// deletes. The store is locked.
func (m *Memory) task(owner, id string) (memTask, bool) {
	t, ok := m.tasks[owner][id]
	if ok && !time.Now().Before(t.expires) {
		delete(m.tasks[owner], id)
		return memTask{}, false
	}
	return t, ok
}

// Task implements Store.
func (m *Memory) Task(ctx context.Context, owner, id string) ([]byte, uint64, error) {
	if err := checkTask(owner, id); err != nil {
		return nil, 0, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, 0, err
	}
	defer m.mu.Unlock()
	t, ok := m.task(owner, id)
	if !ok {
		return nil, 0, fmt.Errorf("store: task %s: %w", id, ErrNotFound)
	}
	return bytes.Clone(t.data), t.rev, nil
}

// Tasks implements Store.
func (m *Memory) Tasks(ctx context.Context, owner string) ([][]byte, error) {
	if err := checkTask(owner, "_"); err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var live []memTask
	for id := range m.tasks[owner] {
		if t, ok := m.task(owner, id); ok {
			live = append(live, t)
		}
	}
	slices.SortFunc(live, func(a, b memTask) int { return cmp.Compare(a.rev, b.rev) })
	out := make([][]byte, len(live))
	for i, t := range live {
		out[i] = bytes.Clone(t.data)
	}
	return out, nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		for w := range m.watchers {
			close(w.stop)
		}
	}
	return nil
}
