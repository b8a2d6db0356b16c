package hooks

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
)

// benchPlan is a result the size of a small plan.
type benchPlan struct {
	Objective string      `json:"objective"`
	Status    string      `json:"status"`
	Steps     []benchStep `json:"steps"`
}

type benchStep struct {
	ID     int    `json:"step_id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// BenchmarkAuditWrite measures writing one call's audit record to each
// sink: its log line, and its line in the file, written a batch of 64 at a
// time.
func BenchmarkAuditWrite(b *testing.B) {
	inv := &session.ToolInvoked{
		CallID: "e7f123812", Tool: "planning_update_step",
		Args:    json.RawMessage(`{"step_id":2,"status":"in_progress"}`),
		Success: true, Message: "Step 2 updated.",
		Text:    "Step 2 updated.\n\nObjective: Ship it\nStatus: active\n\n1 [pending] draft\n2 [in_progress] review\n3 [pending] publish",
		Value:   &benchPlan{"Ship it", "active", []benchStep{{1, "draft", "pending"}, {2, "review", "in_progress"}, {3, "publish", "pending"}}},
		Started: time.Now(), Duration: 72087,
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, c := range []struct {
		name string
		cfg  func(dir string) AuditConfig
	}{
		{"log", func(string) AuditConfig { return AuditConfig{Log: true} }},
		{"file", func(dir string) AuditConfig { return AuditConfig{File: filepath.Join(dir, "a.jsonl")} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, err := newAuditor(c.cfg(b.TempDir()), logger)
			if err != nil {
				b.Fatal(err)
			}
			defer a.close()
			e := auditEntry{ctx: context.Background(), time: time.Now(), session: "bench", inv: inv, subject: "bench", scopes: []string{"plan"}}
			b.ReportAllocs()
			b.ResetTimer()
			if !a.toFile {
				for range b.N {
					a.take(e)
				}
				return
			}
			batch := make([]auditEntry, 64)
			for i := range batch {
				batch[i] = e
			}
			for i := 0; i < b.N; i += len(batch) {
				a.wmu.Lock()
				a.write(batch[:min(len(batch), b.N-i)])
				a.wmu.Unlock()
			}
		})
	}
}
