package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// TestSweepKeepsHistoryBlobs: the sweep after sweepEvery commits keeps
// the states the history's records go back to, and only those.
func TestSweepKeepsHistoryBlobs(t *testing.T) {
	value := func(i int) string { return fmt.Sprintf("v%02d", i) }
	set := tools.New("set", "Set the value.", tools.Annotations{Title: "Set"},
		func(*tools.Context, struct{}) (tools.Result[struct{}], error) {
			return tools.OK("Set.", struct{}{}), nil
		})
	for _, tc := range []struct {
		retention int
		kept      int // the last values whose blobs stay
	}{
		{retention: sweepEvery + 1, kept: sweepEvery},
		{retention: 2, kept: 3},
	} {
		t.Run(fmt.Sprint(tc.retention), func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			r := session.NewRegistry()
			k := session.NewKey[string]("value")
			session.Persist(r, k, session.JSON[string]())
			m := newSessions(r, st, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Minute, 0, tc.retention, time.Now)
			defer m.close()
			u, err := m.forRequest(context.Background(), "", needNew)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.WithValue(context.Background(), historyKey{}, u.history)
			for i := range sweepEvery {
				tx, err := u.sess.Begin()
				if err != nil {
					t.Fatal(err)
				}
				session.Set(u.sess, k, value(i))
				if err := u.commit(ctx, &tools.Call{ID: fmt.Sprint(i), Tool: set, Session: u.sess, Tx: tx}); err != nil {
					t.Fatal(err)
				}
				tx.Commit()
			}
			u.release()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				m.mu.Lock()
				sweeping := m.sweeping[u.handle]
				m.mu.Unlock()
				if !sweeping {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the sweep did not end")
				}
			}
			for i := range sweepEvery {
				_, err := st.Blob(context.Background(), u.handle, statetree.Hash([]byte(`"`+value(i)+`"`)))
				if want := i >= sweepEvery-tc.kept; (err == nil) != want || err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("value %d: stored %v (%v), want %v", i, err == nil, err, want)
				}
			}
			d, err := m.storedHistory(context.Background(), u.handle)
			if err != nil || len(d.Commits) != min(tc.retention, sweepEvery) {
				t.Fatalf("history: %+v, %v", d, err)
			}
		})
	}
}
