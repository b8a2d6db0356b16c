package server_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/store"
)

// TestNotificationsOnlyForChangedContent: a connection subscribed to its
// session's tally and to the record of a call that does not exist is told,
// after a change made here, only of the resources whose content changed
// since it was last told: after the first change both (nothing was known
// of them), then the tally alone, then nothing for a change that leaves
// the tally as it was. A change another replica makes is told for every
// resource subscribed to, since nothing here knows what it changed.
func TestNotificationsOnlyForChangedContent(t *testing.T) {
	const missing = "wink://session/calls/0000000000000000"
	st := store.NewMemory(store.Options{})
	a := newReplica(t, st, countingSection(false, nil), nil)
	b := newReplica(t, st, countingSection(false, nil), nil)
	sub := subscriber{Client: mcptest.NewClient(t, a.MCP(), "watching"), uris: []string{tallyURI, missing}}
	sub.Initialize()
	if err := a.MCP().RegisterSession(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	got := &updates{t: t, c: sub.Client}
	expect := func(want ...string) {
		t.Helper()
		before := len(got.seen)
		for end := time.Now().Add(2 * time.Second); got.take() < before+len(want) && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		}
		time.Sleep(50 * time.Millisecond) // for any that should not come
		got.take()
		if news := got.seen[before:]; !slices.Equal(news, want) {
			t.Fatalf("resources/updated for %q, want %q", news, want)
		}
	}
	call := func(by int) string {
		t.Helper()
		r := sub.Call(context.Background(), "tally_add", map[string]any{"by": by}, nil)
		if r.IsError {
			t.Fatalf("tally_add: %+v", r)
		}
		return r.Session()
	}
	h := call(1)
	expect(tallyURI, missing)
	call(2)
	expect(tallyURI)
	call(0)
	expect()
	if r := add(t, b, h, 3); r.IsError {
		t.Fatalf("b: %+v", r)
	}
	expect(tallyURI, missing)
	call(0)
	expect(tallyURI, missing)
}
