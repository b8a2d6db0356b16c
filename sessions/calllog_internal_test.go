package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// TestLogRecord: a call's record is its JSON when that fits the store;
// otherwise its arguments, value, text and message are cut, each to a JSON
// string that ends with the cut marker giving the full length, until it
// fits; one large field alone keeps much of the room.
func TestLogRecord(t *testing.T) {
	big := func(n int, s string) string { return strings.Repeat(s, n/len(s)) }
	quoted := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	tests := []struct {
		name string
		ev   session.ToolInvoked
		cut  []string // the fields cut
	}{
		{"small", session.ToolInvoked{Args: json.RawMessage(`{"a":1}`), Text: "ok", Value: []int{1}}, nil},
		{"100 KB of arguments", session.ToolInvoked{Args: quoted(big(100<<10, "x")), Text: "ok"}, nil},
		{"arguments larger than the store takes", session.ToolInvoked{Args: quoted(big(3<<20, "x")), Text: "ok"}, []string{"arguments"}},
		{"a value larger than the store takes", session.ToolInvoked{Args: json.RawMessage(`{}`), Value: map[string]string{"v": big(3<<20, "v")}}, []string{"value"}},
		{"arguments that grow when quoted", session.ToolInvoked{Args: json.RawMessage(`[` + big(2<<20, `"a",`) + `"a"]`)}, []string{"arguments"}},
		{"everything large", session.ToolInvoked{
			Args: quoted(big(2<<20, "é")), Value: []string{big(2<<20, "v")}, Text: big(2<<20, "t"), Message: big(2<<20, "m"),
		}, []string{"arguments", "value", "text", "message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			ev.CallID, ev.Tool, ev.Success = "c1", "write_file", true
			rec, err := logRecord(&ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec) > store.MaxValue {
				t.Fatalf("record of %d bytes, more than the store takes (%d)", len(rec), store.MaxValue)
			}
			if tt.cut == nil {
				if want, _ := json.Marshal(&ev); !bytes.Equal(rec, want) {
					t.Errorf("record %.200s, want the call's JSON %.200s", rec, want)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(rec, &got); err != nil {
				t.Fatalf("record is not JSON: %v", err)
			}
			if got["call_id"] != "c1" || got["tool"] != "write_file" || got["success"] != true {
				t.Errorf("record lost the call's identity: %v %v %v", got["call_id"], got["tool"], got["success"])
			}
			value, _ := json.Marshal(ev.Value)
			full := map[string]int{"arguments": len(ev.Args), "value": len(value), "text": len(ev.Text), "message": len(ev.Message)}
			for _, f := range tt.cut {
				s, _ := got[f].(string)
				if marker := fmt.Sprintf("…[cut: %d bytes]", full[f]); !strings.HasSuffix(s, marker) {
					t.Errorf("%s ends %q, want the marker %q", f, s[max(0, len(s)-40):], marker)
				}
				if len(tt.cut) == 1 && len(s) < store.MaxValue/4 {
					t.Errorf("%s, the one field cut, keeps %d bytes of the %d the record may take", f, len(s), store.MaxValue)
				}
			}
		})
	}
}

// gate is a store whose appends each wait for a token from open.
type gate struct {
	store.Store
	open chan struct{}
}

func newGate() *gate {
	return &gate{Store: store.NewMemory(store.Options{}), open: make(chan struct{})}
}

func (g *gate) AppendLog(ctx context.Context, session string, entries ...[]byte) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.AppendLog(ctx, session, entries...)
}

// logBuffer is a log sink safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// callIDs returns the call ids of session h's log in st.
func callIDs(t *testing.T, st store.Store, h string) []string {
	t.Helper()
	recs, err := st.ReadLog(context.Background(), h, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rec := range recs {
		var ev session.ToolInvoked
		if err := json.Unmarshal(rec, &ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.CallID)
	}
	return ids
}

// bytesQueued returns the bytes of the records l holds queued.
func (l *callLog) bytesQueued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued
}

// waiting returns how many records of session h wait to be appended.
func (l *callLog) waiting(h string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.queues[h]; q != nil {
		return len(q.records)
	}
	return 0
}

// TestCallLogBackpressure: records are appended in the order they were
// queued, per session; once maxQueued bytes wait, add waits for room
// instead of dropping a record.
func TestCallLogBackpressure(t *testing.T) {
	g := newGate()
	l := newCallLog(g, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	defer l.close()
	ev := func(i int) *session.ToolInvoked {
		return &session.ToolInvoked{CallID: fmt.Sprint(i), Args: json.RawMessage(`"` + strings.Repeat("x", 500<<10) + `"`)}
	}
	rec, _ := logRecord(ev(0))
	fit := maxQueued / len(rec)
	for i := range fit {
		l.add("a", ev(i))
	}
	added := make(chan struct{})
	go func() {
		l.add("a", ev(fit))
		close(added)
	}()
	select {
	case <-added:
		t.Fatalf("a record past %d queued bytes was queued without waiting", maxQueued)
	case <-time.After(50 * time.Millisecond):
	}
	g.open <- struct{}{} // one append makes room
	<-added
	for range fit {
		g.open <- struct{}{}
	}
	l.close()
	want := make([]string, fit+1)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if got := callIDs(t, g, "a"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("appended %v, want %v", got, want)
	}
	if n := l.bytesQueued(); n != 0 {
		t.Errorf("%d bytes still counted as queued", n)
	}
}

// TestCallLogDrop: dropping a session's log (before the session is
// deleted) discards its queued records and waits for those being
// appended; other sessions keep theirs.
func TestCallLogDrop(t *testing.T) {
	g := newGate()
	l := newCallLog(g, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	l.add("gone", &session.ToolInvoked{CallID: "0"})
	l.add("kept", &session.ToolInvoked{CallID: "k"})
	for l.waiting("gone") != 0 { // the first record is being appended
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 3; i++ {
		l.add("gone", &session.ToolInvoked{CallID: fmt.Sprint(i)})
	}
	dropped := make(chan struct{})
	go func() {
		l.drop("gone")
		close(dropped)
	}()
	select {
	case <-dropped:
		t.Fatal("drop returned while a record of the session was being appended")
	case <-time.After(50 * time.Millisecond):
	}
	g.open <- struct{}{}
	g.open <- struct{}{}
	<-dropped
	l.close()
	if got := callIDs(t, g, "gone"); fmt.Sprint(got) != "[0]" {
		t.Errorf("the dropped session's log holds %v, want only the record in flight [0]", got)
	}
	if got := callIDs(t, g, "kept"); fmt.Sprint(got) != "[k]" {
		t.Errorf("the other session's log holds %v, want [k]", got)
	}
}

// TestCallLogClose: close waits for the queued records to be appended; a
// store that does not take them within the wait loses them with a warning,
// and so does a call that ends after close.
func TestCallLogClose(t *testing.T) {
	st := store.NewMemory(store.Options{})
	l := newCallLog(st, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	for i := range 50 {
		l.add(fmt.Sprint("s", i%3), &session.ToolInvoked{CallID: fmt.Sprint(i)})
	}
	l.close()
	n := 0
	for s := range 3 {
		n += len(callIDs(t, st, fmt.Sprint("s", s)))
	}
	if n != 50 {
		t.Errorf("%d records appended by close, want 50", n)
	}

	var logs logBuffer
	g := newGate()
	l = newCallLog(g, slog.New(slog.NewTextHandler(&logs, nil)))
	l.wait = 50 * time.Millisecond
	for i := range 5 {
		l.add("stuck", &session.ToolInvoked{CallID: fmt.Sprint(i)})
	}
	l.close()
	l.add("stuck", &session.ToolInvoked{CallID: "late"})
	if got := logs.String(); !strings.Contains(got, "lost=5") || !strings.Contains(got, "call=late") {
		t.Errorf("logs do not report the records lost:\n%s", got)
	}
	if n := l.bytesQueued(); n != 0 {
		t.Errorf("%d bytes still counted as queued", n)
	}
}

// counting is a store that counts its appends.
type counting struct {
	store.Store
	appends atomic.Int64
}

func (c *counting) AppendLog(ctx context.Context, session string, entries ...[]byte) error {
	c.appends.Add(1)
	return c.Store.AppendLog(ctx, session, entries...)
}

// TestCallLogBatches: the records of calls made in quick succession reach
// the store in a few appends, all of them, in order; a read has the
// records queued appended at once, without waiting for more.
func TestCallLogBatches(t *testing.T) {
	st := &counting{Store: store.NewMemory(store.Options{})}
	l := newCallLog(st, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	defer l.close()
	l.linger = time.Hour // only a read or close appends
	var want []string
	for i := range 50 {
		l.add("s", &session.ToolInvoked{CallID: fmt.Sprint(i)})
		want = append(want, fmt.Sprint(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := l.read(ctx, "s", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 50 {
		t.Fatalf("read %d records, want 50", len(recs))
	}
	if got := callIDs(t, st, "s"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("appended %v, want %v", got, want)
	}
	if n := st.appends.Load(); n != 1 {
		t.Errorf("50 records took %d appends, want 1", n)
	}
}
