package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/store"
)

// TestTaskLost: a task whose record says it is still working long after
// its deadline lost the process that ran it, and reads as failed.
func TestTaskLost(t *testing.T) {
	now := time.Now()
	ts := newTasks(store.NewMemory(store.Options{}), slog.New(slog.DiscardHandler), func() time.Time { return now })
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		deadline time.Time
		status   mcp.TaskStatus
	}{
		{"within the grace", now.Add(-taskGrace / 2), mcp.TaskStatusWorking},
		{"past it", now.Add(-2 * taskGrace), mcp.TaskStatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &taskRecord{ID: "t_" + tc.name[:4], Owner: "subject:alice", Status: mcp.TaskStatusWorking, Created: now.Add(-time.Hour), TTL: 2 * time.Hour, Deadline: tc.deadline}
			if _, err := ts.put(ctx, r, 0); err != nil {
				t.Fatal(err)
			}
			got, _, err := ts.get(ctx, "subject:alice", r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ts.finished(got); got.Status != tc.status {
				t.Errorf("status %s, want %s", got.Status, tc.status)
			}
			if _, _, err := ts.get(ctx, "subject:bob", r.ID); err == nil {
				t.Error("another principal read the record")
			}
		})
	}
}
