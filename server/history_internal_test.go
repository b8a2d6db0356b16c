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

// disk is a resource whose every snapshot reports that the file big.txt
// changed outside the state, from content(n-1) to content(n), n counting
// the snapshots.
type disk struct{ n int }

func (d *disk) Snapshot() (session.Restorer, error) { d.n++; return d, nil }
func (d *disk) Restore() error                      { return nil }
func (d *disk) Release()                            {}
func (d *disk) Changes() ([]session.FileChange, error) {
	return []session.FileChange{{Path: "big.txt", Before: bigFile(d.n - 2), After: bigFile(d.n - 1), Existed: d.n > 1, Exists: true, Outside: true}}, nil
}

// bigFile is the content of big.txt after commit i: two chunks, the
// first shared by every version.
func bigFile(i int) []byte {
	if i < 0 {
		return nil
	}
	return append(make([]byte, statetree.ChunkSize), fmt.Sprintf("version %d", i)...)
}

// TestSweepKeepsHistoryBlobs: the sweep after sweepEvery commits keeps
// the states the history's records go back to, and the files they
// changed outside the state, and only those.
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
			session.Provide(r, session.NewResourceKey[*disk]("disk"), func(*session.Session) (*disk, error) { return &disk{}, nil })
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
				want := i >= sweepEvery-tc.kept
				for what, blob := range map[string][]byte{"value": []byte(`"` + value(i) + `"`), "file's last chunk": bigFile(i)[statetree.ChunkSize:]} {
					_, err := st.Blob(context.Background(), u.handle, statetree.Hash(blob))
					if (err == nil) != want || err != nil && !errors.Is(err, store.ErrNotFound) {
						t.Errorf("%s %d: stored %v (%v), want %v", what, i, err == nil, err, want)
					}
				}
			}
			if _, err := st.Blob(context.Background(), u.handle, statetree.Hash(bigFile(0)[:statetree.ChunkSize])); err != nil {
				t.Errorf("the chunk every version shares: %v", err)
			}
			d, err := m.storedHistory(context.Background(), u.handle)
			if err != nil || len(d.Commits) != min(tc.retention, sweepEvery) {
				t.Fatalf("history: %+v, %v", d, err)
			}
		})
	}
}
