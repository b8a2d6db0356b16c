package sessions

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

// TestSweepKeepsHistoryBlobs: the sweep that the blobs of enough
// commits start keeps the states the history's records go back to, and
// the files they changed outside the state, and only those.
func TestSweepKeepsHistoryBlobs(t *testing.T) {
	value := func(i int) string { return fmt.Sprintf("v%02d", i) }
	for _, retention := range []int{1000, 2} {
		t.Run(fmt.Sprint(retention), func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			r := session.NewRegistry()
			k := session.NewKey[string]("value")
			session.Persist(r, k, session.JSON[string]())
			session.Provide(r, session.NewResourceKey[*disk]("disk"), func(*session.Session) (*disk, error) { return &disk{}, nil })
			m := newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Minute, History: retention})
			defer m.Close()
			u, err := m.Use(context.Background(), Request{Need: NeedNew})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var roots []string // of the state after each commit
			sweeping := func() bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				return m.sweeping[u.Handle]
			}
			for i := 0; !sweeping(); i++ {
				if i == 1000 {
					t.Fatal("1000 commits started no sweep")
				}
				tx, err := u.Session.Begin()
				if err != nil {
					t.Fatal(err)
				}
				session.Set(u.Session, k, value(i))
				if err := u.Commit(ctx, &Commit{CallID: fmt.Sprint(i), Tool: "set", Tx: tx}); err != nil {
					t.Fatal(err)
				}
				tx.Commit()
				m.mu.Lock()
				roots = append(roots, m.handles[u.Handle].state.Root)
				m.mu.Unlock()
			}
			u.Release()
			for deadline := time.Now().Add(10 * time.Second); sweeping(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the sweep did not end")
				}
			}
			n := len(roots)
			kept := min(n, retention+1) // the states and files of the last records
			sh, err := st.Load(ctx, u.Handle)
			if err != nil {
				t.Fatal(err)
			}
			hd, err := readHead(u.Handle, sh.Data)
			if err != nil {
				t.Fatal(err)
			}
			_, docs, err := m.headHistory(ctx, u.Handle, hd)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				want := i >= n-kept
				for what, blob := range map[string]string{"state": roots[i], "file's last chunk": statetree.Hash(bigFile(i)[statetree.ChunkSize:])} {
					_, err := st.Blob(context.Background(), u.Handle, blob)
					if err != nil && !errors.Is(err, store.ErrNotFound) {
						t.Fatal(err)
					}
					// A state is kept as a blob, or in the history's blob
					// or the head's tail.
					_, held := docs[blob]
					if stored := err == nil || held; stored != want {
						t.Errorf("%s %d of %d: stored %v (%v), want %v", what, i, n, stored, err, want)
					}
				}
			}
			if _, err := st.Blob(context.Background(), u.Handle, statetree.Hash(bigFile(0)[:statetree.ChunkSize])); err != nil {
				t.Errorf("the chunk every version shares: %v", err)
			}
			d, err := m.storedHistory(context.Background(), u.Handle)
			if err != nil || len(d.Commits) != min(retention, n) {
				t.Fatalf("history: %+v, %v", d, err)
			}
		})
	}
}
