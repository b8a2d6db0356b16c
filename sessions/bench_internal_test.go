package sessions

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
)

// BenchmarkCommit measures a commit that changes one small STATE slice
// (a plan's size), with the history off and on: in the memory store, the
// history's share of a commit without the store's; in the embedded store,
// with what the store does with the bytes the history adds (the NATS
// server's work in its own goroutines included in the time, not in a
// profile of the commit).
func BenchmarkCommit(b *testing.B) {
	for _, bc := range []struct {
		store     string
		retention int
	}{{"memory", 0}, {"memory", 20}, {"embedded", 0}, {"embedded", 20}} {
		b.Run(fmt.Sprintf("store=%s/history=%d", bc.store, bc.retention), func(b *testing.B) {
			u := planSession(b, bc.store, bc.retention)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				commitPlan(b, u, i)
			}
		})
	}
}

// planKey is the STATE slice the commit benchmarks change: a plan's text,
// stored as it is.
var planKey = session.NewKey[string]("plan")

// planSession returns a new session of a manager whose sessions hold
// planKey, in a store of kind "memory" or "embedded", with a history of
// retention records.
func planSession(b *testing.B, kind string, retention int) *Use {
	ctx := context.Background()
	var st store.Store = store.NewMemory(store.Options{})
	if kind == "embedded" {
		es, err := store.OpenEmbedded(ctx, b.TempDir(), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { es.Close() })
		st = es
	}
	r := session.NewRegistry()
	session.Persist(r, planKey, session.Codec[string]{
		Marshal:   func(v string) ([]byte, error) { return []byte(v), nil },
		Unmarshal: func(b []byte) (string, error) { return string(b), nil },
		Text:      func(v string) string { return v },
	})
	m := newManager(Options{Registry: r, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, History: retention})
	b.Cleanup(m.Close)
	u, err := m.Use(ctx, Request{Need: NeedNew})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(u.Release)
	return u
}

// commitPlan commits the n-th plan, a plan call's size, to u's session.
func commitPlan(b *testing.B, u *Use, n int) {
	tx, err := u.Session.Begin()
	if err != nil {
		b.Fatal(err)
	}
	session.Set(u.Session, planKey, fmt.Sprintf("Objective: bench %d\nStatus: active\n\n1 [pending] a\n2 [pending] b\n3 [pending] c\n", n))
	if err := u.Commit(context.Background(), &Commit{CallID: fmt.Sprint(n), Tool: "planning_setup_plan", Tx: tx}); err != nil {
		b.Fatal(err)
	}
	tx.Commit()
}
