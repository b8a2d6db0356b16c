package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
)

// newStoredServer returns a server that keeps its sessions in st, as one
// process of several on one store, or one process after another.
func newStoredServer(t *testing.T, st store.Store) *server.Server {
	t.Helper()
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, SessionTTL: time.Minute, Store: st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// countOf returns the count of session h as srv reads it.
func countOf(t *testing.T, srv *server.Server, h string) any {
	t.Helper()
	r := mcptest.NewClient(t, srv.MCP(), "").Call(context.Background(), "probe_get", map[string]any{"session": h}, modern(nil))
	return r.StructuredContent["count"]
}

// TestStoredSessionsOutliveTheProcess: a session committed by one server
// is resumed by its handle on another on the same store, as after a
// restart, and so is the session of a connection that ended, unless its
// client ended it.
func TestStoredSessionsOutliveTheProcess(t *testing.T) {
	st := store.NewMemory(store.Options{})
	ctx := context.Background()
	first := newStoredServer(t, st)
	c := mcptest.NewClient(t, first.MCP(), "")
	h := c.Call(ctx, "probe_add", map[string]any{"by": 3}, modern(nil)).Session()
	c.Call(ctx, "probe_add", map[string]any{"by": 4, "session": h}, modern(nil))

	second := newStoredServer(t, st)
	if got := countOf(t, second, h); got != float64(7) {
		t.Fatalf("count after the restart = %v, want 7", got)
	}
	// A read commits nothing.
	before, err := st.Load(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	countOf(t, second, h)
	if after, _ := st.Load(ctx, h); after.Rev != before.Rev {
		t.Errorf("a read moved the head from %d to %d", before.Rev, after.Rev)
	}
	// A legacy connection's session outlives the connection, in the store:
	// its client may continue it by its handle, here or on another
	// replica.
	legacy := mcptest.NewClient(t, second.MCP(), "legacy")
	if err := second.MCP().RegisterSession(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	lh := legacy.Call(ctx, "probe_add", map[string]any{"by": 1}, nil).Session()
	live := second.Sessions().Len()
	second.MCP().UnregisterSession(ctx, "legacy")
	if n := second.Sessions().Len(); n != live-1 {
		t.Errorf("%d sessions in memory after the connection ended, want %d", n, live-1)
	}
	if got := countOf(t, newStoredServer(t, st), lh); got != float64(1) {
		t.Errorf("the ended connection's session by its handle: %v, want 1", got)
	}
	// One its client ended (an HTTP DELETE) ends with it.
	deleted := mcptest.NewClient(t, second.MCP(), "deleted")
	if err := second.MCP().RegisterSession(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	dh := deleted.Call(ctx, "probe_add", map[string]any{"by": 1}, nil).Session()
	second.MCP().UnregisterSession(server.ClientEnded(ctx), "deleted")
	if _, err := st.Load(ctx, dh); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the session its client ended: %v, want ErrNotFound", err)
	}
}

// failing is a store whose commits fail while down is set.
type failing struct {
	store.Store
	down atomic.Bool
}

func (f *failing) Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error) {
	if f.down.Load() {
		return 0, store.ErrUnavailable
	}
	return f.Store.Commit(ctx, session, rev, head, blobs)
}

// TestStoreDown: a call whose commit the store fails gets a clear error,
// and nothing of it is kept, in memory or in the store; the server serves
// on when the store is back.
func TestStoreDown(t *testing.T) {
	st := &failing{Store: store.NewMemory(store.Options{})}
	ctx := context.Background()
	srv := newStoredServer(t, st)
	c := mcptest.NewClient(t, srv.MCP(), "")
	h := c.Call(ctx, "probe_add", map[string]any{"by": 1}, modern(nil)).Session()
	st.down.Store(true)
	r := c.Call(ctx, "probe_add", map[string]any{"by": 5, "session": h}, modern(nil))
	if !r.IsError || !strings.HasPrefix(r.Text(), sessions.StoreDownMessage) {
		t.Fatalf("a commit on a store that is down: %+v", r)
	}
	if got := countOf(t, srv, h); got != float64(1) {
		t.Errorf("in memory: %v, want 1", got)
	}
	st.down.Store(false)
	if got := countOf(t, newStoredServer(t, st), h); got != float64(1) {
		t.Errorf("in the store: %v, want 1", got)
	}
	if r := c.Call(ctx, "probe_add", map[string]any{"by": 2, "session": h}, modern(nil)); r.IsError || r.StructuredContent["count"] != float64(3) {
		t.Errorf("with the store back: %+v", r)
	}
}
