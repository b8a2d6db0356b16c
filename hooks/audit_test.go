package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// TestAuditLog: each call's audit line is in the log when the call
// returns (read without flushing the auditor), with its fields, each line
// with its own session, subject and tool.
func TestAuditLog(t *testing.T) {
	h := newHarness(t, Defaults())
	cs := newClientSession("s1")
	h.call(as("alice", "x"), cs, "p_write", map[string]any{"by": 2})
	h.call(as("alice"), cs, "p_write", map[string]any{"by": -1})
	h.call(as("bob"), newClientSession("s2"), "p_write", map[string]any{"by": 1})
	h.call(as("bob"), newClientSession("s2"), "p_read", map[string]any{})
	h.call(context.Background(), cs, "p_read", map[string]any{})
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "tool call" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 5 {
		t.Fatalf("%d audit lines, want 5:\n%s", len(lines), h.logged())
	}
	if l := lines[0]; l["level"] != "INFO" || l["success"] != true || l["args"] != `{"by":2}` {
		t.Errorf("first line %v", l)
	}
	if l := lines[1]; l["success"] != false || l["class"] != "failure" || l["message"] != "Negative." {
		t.Errorf("second line %v", l)
	}
	for i, want := range [][3]any{{"s1", "alice", "p_write"}, {"s1", "alice", "p_write"}, {"s2", "bob", "p_write"}, {"s2", "bob", "p_read"}, {"s1", nil, "p_read"}} {
		if l := lines[i]; l["session"] != want[0] || l["subject"] != want[1] || l["tool"] != want[2] {
			t.Errorf("line %d: session %v, subject %v, tool %v; want %v", i+1, l["session"], l["subject"], l["tool"], want)
		}
	}
}

func TestAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := Config{
		Audit:  AuditConfig{File: path, Fsync: FsyncAlways},
		Output: OutputConfig{Redact: []string{`hunter\d`}},
		Cache:  CacheConfig{Enabled: true},
	}
	h := newHarness(t, cfg)
	cs := newClientSession("s1")
	ctx := as("alice", "a", "b")
	h.call(ctx, cs, "p_read", map[string]any{"key": "hunter2"})
	h.call(ctx, cs, "p_read", map[string]any{"key": "hunter2"})
	h.call(ctx, cs, "p_write", map[string]any{"by": "x"})
	recs, err := ReadAuditFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	log := h.invocations(cs)
	for i, rec := range recs {
		if rec.CallID != log[i].CallID || rec.Session != "s1" || rec.Subject != "alice" || len(rec.Scopes) != 2 {
			t.Errorf("record %d: %+v", i, rec)
		}
		if b, _ := json.Marshal(rec); bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("record %d holds the secret: %s", i, b)
		}
	}
	if string(recs[0].Args) != `{"key":"[REDACTED]"}` || recs[0].Cached || !recs[1].Cached || recs[2].ErrorClass != "validation" {
		t.Errorf("records %+v", recs)
	}
}

// TestAuditFileConcurrent: records written at once never interleave.
func TestAuditFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h := newHarness(t, Config{Audit: AuditConfig{File: path, Fsync: FsyncInterval}})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			h.call(context.Background(), newClientSession(string(rune('a'+i%5))), "p_write", map[string]any{"by": 1})
		})
	}
	wg.Wait()
	if err := h.hooks.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAuditFile(path)
	if err != nil || len(recs) != 50 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
}

// TestAuditTornRecord: a record cut off part-way (the machine crashed while
// writing it) is skipped on read, the records before it are intact, and
// when the file is opened again the partial line is cut off so that new
// records start on a line of their own.
func TestAuditTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h := newHarness(t, Config{Audit: AuditConfig{File: path, Fsync: FsyncNever}})
	cs := newClientSession("s1")
	for i := range 3 {
		h.call(context.Background(), cs, "p_write", map[string]any{"by": i + 1})
	}
	h.hooks.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	whole := len(lines[0]) + len(lines[1])
	for _, cut := range []int{whole + 1, whole + len(lines[2])/2, whole + len(lines[2]) - 2, whole + len(lines[2]) - 1} {
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		// Only the newline missing: the record is whole.
		want := 2
		if cut == len(data)-1 {
			want = 3
		}
		recs, err := ReadAuditFile(path)
		if err != nil || len(recs) != want || string(recs[1].Args) != `{"by":2}` {
			t.Fatalf("cut at %d of %d: %d records, want %d; err %v", cut, len(data), len(recs), want, err)
		}
		// Writing again repairs the tail first.
		h2 := newHarness(t, Config{Audit: AuditConfig{File: path, Fsync: FsyncAlways}})
		h2.call(context.Background(), cs, "p_write", map[string]any{"by": 9})
		h2.hooks.Close()
		recs, err = ReadAuditFile(path)
		if err != nil || len(recs) != want+1 || string(recs[want].Args) != `{"by":9}` {
			t.Fatalf("cut at %d, then appended: %d records, want %d; err %v", cut, len(recs), want+1, err)
		}
	}
	// A bad line that is not the last is an error, never skipped.
	if _, err := ReadAudit(strings.NewReader("{}\n{bad\n{}\n")); err == nil || !strings.Contains(err.Error(), "audit line 2") {
		t.Errorf("got %v, want an error about line 2", err)
	}
}

func TestAuditOff(t *testing.T) {
	h := newHarness(t, Config{})
	if h.hooks.Audit() != nil {
		t.Error("audit on with both sinks off")
	}
	h.call(context.Background(), newClientSession("s"), "p_read", map[string]any{})
	if strings.Contains(h.logged(), "tool call") {
		t.Error("logged with the audit off")
	}
}

// TestAuditFileBatched: without FsyncAlways, records reach the file soon
// after their calls without waiting for Close, in the order taken (when
// the writer falls behind, calls write batches themselves), and Close
// writes what is still pending; a record taken after Close is dropped
// with an error in the log.
func TestAuditFileBatched(t *testing.T) {
	for _, fsync := range []Fsync{FsyncInterval, FsyncNever} {
		t.Run(string(fsync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			logs := &syncBuffer{}
			a, err := newAuditor(AuditConfig{File: path, Fsync: fsync}, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			args := json.RawMessage(`{"text":"` + strings.Repeat("x", 500) + `"}`)
			entry := func(i int) auditEntry {
				return auditEntry{ctx: context.Background(), session: "s", inv: &session.ToolInvoked{CallID: strconv.Itoa(i), Tool: "t", Args: args}}
			}
			a.take(entry(0))
			// Written by the writer, not by Close.
			for deadline := time.Now().Add(10 * time.Second); ; {
				recs, err := ReadAuditFile(path)
				if err == nil && len(recs) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the record was not written: %d records, err %v", len(recs), err)
				}
				time.Sleep(time.Millisecond)
			}
			// More records than maxPending at once.
			const n = 3 * maxPending
			for i := 1; i < n; i++ {
				a.take(entry(i))
			}
			if err := a.close(); err != nil {
				t.Fatal(err)
			}
			recs, err := ReadAuditFile(path)
			if err != nil || len(recs) != n {
				t.Fatalf("%d records, want %d; err %v", len(recs), n, err)
			}
			for i, r := range recs {
				if r.CallID != strconv.Itoa(i) {
					t.Fatalf("record %d is call %s", i, r.CallID)
				}
			}
			a.take(entry(n))
			if !strings.Contains(logs.String(), "after the audit was closed") {
				t.Errorf("a record after close was not reported: %s", logs.String())
			}
			if recs, _ := ReadAuditFile(path); len(recs) != n {
				t.Errorf("%d records after a late one, want %d", len(recs), n)
			}
		})
	}
}

// TestAuditValueNotMarshalable: a value that cannot be encoded is recorded
// as a note, and the records around it are whole.
func TestAuditValueNotMarshalable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := newAuditor(AuditConfig{File: path, Fsync: FsyncNever}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []any{map[string]int{"a": 1}, make(chan int), []string{"<&>"}} {
		a.take(auditEntry{ctx: context.Background(), inv: &session.ToolInvoked{CallID: strconv.Itoa(i), Value: v}})
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAuditFile(path)
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"value":{"a":1}`, `"value":"<value not marshalable>"`, `"value":["<&>"]`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("no %s in\n%s", want, data)
		}
	}
}
