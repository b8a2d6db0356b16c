package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
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
	cs := h.client("s1")
	cs.Call(as("alice", "x"), "p_write", map[string]any{"by": 2}, nil)
	cs.Call(as("alice"), "p_write", map[string]any{"by": -1}, nil)
	h.client("s2").Call(as("bob"), "p_write", map[string]any{"by": 1}, nil)
	h.client("s2").Call(as("bob"), "p_read", map[string]any{}, nil)
	cs.Call(context.Background(), "p_read", map[string]any{}, nil)
	long := strings.Repeat("k", 2*auditLogArgs)
	cs.Call(context.Background(), "p_read", map[string]any{"key": long}, nil)
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
	if len(lines) != 6 {
		t.Fatalf("%d audit lines, want 6:\n%s", len(lines), h.logged())
	}
	if l := lines[0]; l["level"] != "INFO" || l["success"] != true || l["args"] != `{"by":2}` {
		t.Errorf("first line %v", l)
	}
	if l := lines[1]; l["success"] != false || l["class"] != "failure" || l["message"] != "Negative." {
		t.Errorf("second line %v", l)
	}
	// Sessions are named by their LogID, never by their handle.
	s1, s2 := session.LogID(h.session(cs).ID()), session.LogID(h.session(h.client("s2")).ID())
	for i, want := range [][3]any{{s1, "alice", "p_write"}, {s1, "alice", "p_write"}, {s2, "bob", "p_write"}, {s2, "bob", "p_read"}, {s1, nil, "p_read"}} {
		if l := lines[i]; l["session"] != want[0] || l["subject"] != want[1] || l["tool"] != want[2] {
			t.Errorf("line %d: session %v, subject %v, tool %v; want %v", i+1, l["session"], l["subject"], l["tool"], want)
		}
	}
	// Long arguments are cut in the line, marker included.
	args, _ := lines[5]["args"].(string)
	if marker := fmt.Sprintf("…[cut: %d bytes]", len(`{"key":""}`)+len(long)); len(args) > auditLogArgs || !strings.HasPrefix(args, `{"key":"kkk`) || !strings.HasSuffix(args, marker) {
		t.Errorf("long arguments logged as %q (%d bytes), want at most %d bytes ending %q", args, len(args), auditLogArgs, marker)
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
	cs := h.client("s1")
	ctx := as("alice", "a", "b")
	cs.Call(ctx, "p_read", map[string]any{"key": "hunter2"}, nil)
	cs.Call(ctx, "p_read", map[string]any{"key": "hunter2"}, nil)
	cs.Call(ctx, "p_write", map[string]any{"by": "x"}, nil)
	recs, err := ReadAuditFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	log := h.invocations(cs)
	for i, rec := range recs {
		if rec.CallID != log[i].CallID || rec.Session != session.LogID(h.session(cs).ID()) || rec.Subject != "alice" || len(rec.Scopes) != 2 {
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

// TestAuditFileConcurrent: records written at once never interleave, and
// with always every one is synced when its call returns.
func TestAuditFileConcurrent(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncInterval} {
		t.Run(string(fsync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			h := newHarness(t, Config{Audit: AuditConfig{File: path, Fsync: fsync}})
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					h.client(string(rune('a'+i%5))).Call(context.Background(), "p_write", map[string]any{"by": 1}, nil)
				})
			}
			wg.Wait()
			if f := h.hooks.audit.file; fsync == FsyncAlways && f.synced != 50 {
				t.Errorf("%d records synced, want 50", f.synced)
			}
			if err := h.hooks.Close(); err != nil {
				t.Fatal(err)
			}
			recs, err := ReadAuditFile(path)
			if err != nil || len(recs) != 50 {
				t.Fatalf("%d records, err %v", len(recs), err)
			}
		})
	}
}

// TestAuditTornRecord: a record cut off part-way (the machine crashed while
// writing it) is skipped on read, the records before it are intact, and
// when the file is opened again the partial line is cut off so that new
// records start on a line of their own.
func TestAuditTornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h := newHarness(t, Config{Audit: AuditConfig{File: path, Fsync: FsyncNever}})
	cs := h.client("s1")
	for i := range 3 {
		cs.Call(context.Background(), "p_write", map[string]any{"by": i + 1}, nil)
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
		h2.client("s1").Call(context.Background(), "p_write", map[string]any{"by": 9}, nil)
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
	h.client("s").Call(context.Background(), "p_read", map[string]any{}, nil)
	if strings.Contains(h.logged(), "tool call") {
		t.Error("logged with the audit off")
	}
}

// TestAuditFileWritten: in every fsync mode, a record is in the file when
// take returns, without a tick or Close (so a killed server loses no
// record of an answered call), whole lines in the order taken, long ones
// included; with always it is synced then too, with interval within a
// tick, with never not before Close; Close keeps them; a record taken
// after Close is dropped with an error in the log.
func TestAuditFileWritten(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncInterval, FsyncNever} {
		t.Run(string(fsync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			logs := &syncBuffer{}
			a, err := newAuditor(AuditConfig{File: path, Fsync: fsync}, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			take := func(i int) {
				args := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<i) + `"}`)
				a.take(context.Background(), &AuditRecord{Session: "s", ToolInvoked: session.ToolInvoked{CallID: strconv.Itoa(i), Tool: "t", Args: args}})
			}
			// inFile checks that the file holds the records of calls
			// 0 to n-1, whole lines in order.
			inFile := func(n int) {
				t.Helper()
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
					t.Fatalf("the file ends in a partial line: %q", data[max(0, len(data)-80):])
				}
				recs, err := ReadAudit(bytes.NewReader(data))
				if err != nil || len(recs) != n {
					t.Fatalf("%d records, want %d; err %v", len(recs), n, err)
				}
				for i, r := range recs {
					if r.CallID != strconv.Itoa(i) {
						t.Fatalf("record %d is call %s", i, r.CallID)
					}
				}
			}
			// synced is how many lines the file has synced.
			synced := func() int64 {
				a.file.syncMu.Lock()
				defer a.file.syncMu.Unlock()
				return a.file.synced
			}
			const n = 20 // the last line holds 512 KiB of arguments
			for i := range n {
				take(i)
				inFile(i + 1)
				if got := synced(); fsync == FsyncAlways && got != int64(i+1) || fsync == FsyncNever && got != 0 {
					t.Fatalf("after line %d, %d synced", i+1, got)
				}
			}
			if fsync == FsyncInterval {
				for deadline := time.Now().Add(10 * auditTick); synced() != n; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%d lines synced, want %d", synced(), n)
					}
				}
			}
			if err := a.close(); err != nil {
				t.Fatal(err)
			}
			inFile(n)
			take(n)
			if !strings.Contains(logs.String(), "after the audit was closed") {
				t.Errorf("a record after close was not reported: %s", logs.String())
			}
			inFile(n)
		})
	}
}

// TestAuditFileLine: a line of the file is the JSON encoding of its
// AuditRecord, with the same keys and omissions, and reads back as it.
func TestAuditFileLine(t *testing.T) {
	tricky := "quote \" backslash \\ newline \n tab \t nul \x00 utf8 é 日本 \u2028 <html>&"
	recs := []AuditRecord{
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)},
		{
			Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Session: "s", Subject: tricky, Scopes: []string{"a", tricky},
			ToolInvoked: session.ToolInvoked{
				CallID: "c1", Tool: "t", Args: json.RawMessage("{\n  \"a\": [1, 2]\n}"), Success: true,
				Message: tricky, Text: tricky, Value: map[string]any{"k": tricky, "n": 1.5},
				Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Duration: 1234,
				ErrorClass: "failure", Cached: true, Retries: 2, Consent: "declined",
			},
			Error: tricky,
		},
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := newAuditor(AuditConfig{File: path, Fsync: FsyncAlways}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		a.take(context.Background(), &rec)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(recs), data)
	}
	for i, rec := range recs {
		want, err := json.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		var g, w map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &g); err != nil {
			t.Fatalf("line %d: %v\n%s", i, err, lines[i])
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[1], `<html>&`) {
		t.Errorf("HTML characters escaped: %s", lines[1])
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
		a.take(context.Background(), &AuditRecord{ToolInvoked: session.ToolInvoked{CallID: strconv.Itoa(i), Value: v}})
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
	for _, want := range []string{`"value":{"a":1}`, `"value":"!ERROR:json: unsupported type: chan int"`, `"value":["<&>"]`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("no %s in\n%s", want, data)
		}
	}
}
