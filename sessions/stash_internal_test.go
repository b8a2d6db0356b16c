package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// stashed is a store that records the located names PutData gives.
type stashed struct {
	store.Store
	mu    sync.Mutex
	names []string
}

func (s *stashed) PutData(ctx context.Context, session string, contents [][]byte) ([]string, error) {
	names, err := s.Store.PutData(ctx, session, contents)
	s.mu.Lock()
	s.names = append(s.names, names...)
	s.mu.Unlock()
	return names, err
}

// TestStashedContents: a file's content that a call writes in a stored
// session is a located blob, which the head names and another process's
// sessions on the store read back; a content the call replaced before it
// committed, and one that a call rolled back wrote, are removed by the
// next sweep, and the one the head names is kept.
func TestStashedContents(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return store.NewMemory(store.Options{}) }},
		{"embedded", func(t *testing.T) store.Store {
			st, err := store.OpenEmbedded(context.Background(), t.TempDir(), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stashed{Store: tc.open(t)}
			m := workspaceSessions(t, st, 0)
			ctx := context.Background()
			u, err := m.Use(ctx, Request{Need: NeedNew})
			if err != nil {
				t.Fatal(err)
			}
			defer u.Release()
			w := workspace.From(u.Session)
			tx, err := u.Session.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"first draft", "second draft"} {
				if err := w.WriteFile("draft.txt", []byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			if err := u.Commit(ctx, &Commit{CallID: "c1", Tool: "write", Tx: tx}); err != nil {
				t.Fatal(err)
			}
			tx.Commit()
			if tx, err = u.Session.Begin(); err != nil {
				t.Fatal(err)
			}
			if err := w.WriteFile("failed.txt", []byte("rolled back")); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if len(st.names) != 3 {
				t.Fatalf("stashed %q, want the three contents written", st.names)
			}
			replaced, kept, failed := st.names[0], st.names[1], st.names[2]
			for _, n := range st.names {
				if !strings.Contains(n, "@") {
					t.Fatalf("stashed as %q, not a located name", n)
				}
			}

			get := func(name string) ([]byte, error) { return st.Blob(ctx, u.Handle, name) }
			live, err := statetree.Live(storedHead(t, st, u.Handle).Doc, get)
			if err != nil {
				t.Fatal(err)
			}
			if !live[kept] || live[replaced] || live[failed] {
				t.Fatalf("the head uses %v; want %s and neither %s nor %s", live, kept, replaced, failed)
			}
			other := workspaceSessions(t, st, 0)
			u2, err := other.Use(ctx, Request{Handle: u.Handle})
			if err != nil {
				t.Fatal(err)
			}
			data, err := workspace.From(u2.Session).ReadFile("draft.txt")
			u2.Release()
			if err != nil || string(data) != "second draft" {
				t.Fatalf("another process reads %q, %v; want the second draft", data, err)
			}

			sweepOnce(t, m, u, "x")
			for _, n := range []string{replaced, failed} {
				if _, err := get(n); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s after the sweep: %v, want it removed", n, err)
				}
			}
			if b, err := get(kept); err != nil || string(b) != "second draft" {
				t.Errorf("%s after the sweep: %q, %v; want it kept", kept, b, err)
			}
		})
	}
}
