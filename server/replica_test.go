package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Two servers on one store stand for two replicas: each holds the
// sessions it serves in memory, and learns of the other's commits from
// the store's watch or from a commit that loses its compare-and-swap.

// tally is the tally section's state, and tallied its event.
var tally = session.NewKey[int]("tally.count")

type tallied struct{ n int }

// tallyURI is the tally section's resource.
const tallyURI = "wink://tally"

// countingSection returns a section whose tool tally_add adds to the
// session's tally, and whose resource shows it. Each run of tally_add
// calls hold, when set, after adding and before it returns.
func countingSection(contained bool, hold func()) *sections.Section {
	read := func(s *session.Session) counter {
		n, _ := session.Get(s, tally)
		return counter{n}
	}
	return &sections.Section{
		Key:       "tally",
		Title:     "Tally",
		Guidance:  "A tally.",
		Contained: contained,
		Setup: func(r *session.Registry) {
			session.Persist(r, tally, session.JSON[int]())
			session.On(r, tally, func(old int, _ bool, ev tallied) (int, error) { return old + ev.n, nil })
		},
		Tools: []*tools.Tool{
			tools.New("tally_add", "Add to the tally.", tools.Annotations{Title: "Add"},
				func(ctx *tools.Context, p byParams) (tools.Result[counter], error) {
					if n := read(ctx.Session).Count; n+p.By < 0 {
						if hold != nil {
							hold()
						}
						return tools.Fail[counter](fmt.Sprintf("The tally is %d; it cannot go below zero.", n)), nil
					}
					if err := ctx.Dispatch(tallied{p.By}); err != nil {
						return tools.Result[counter]{}, err
					}
					if hold != nil {
						hold()
					}
					return tools.OK(fmt.Sprintf("Added %d.", p.By), read(ctx.Session)), nil
				}),
		},
		Resources: []sections.Resource{{
			URI: tallyURI, Name: "Tally", MIMEType: "text/plain",
			Read: func(_ context.Context, s *session.Session) (string, error) {
				return fmt.Sprint(read(s).Count), nil
			},
		}},
	}
}

// newReplica returns a server of sec on st, closed at the end of the test.
func newReplica(t *testing.T, st store.Store, sec *sections.Section, logger *slog.Logger) *server.Server {
	t.Helper()
	tree, err := sections.NewTree(sec)
	if err != nil {
		t.Fatal(err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, SessionTTL: time.Minute, Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// add calls tally_add on srv, in session h ("" for the client's own).
func add(t *testing.T, srv *server.Server, h string, by int) mcptest.Result {
	t.Helper()
	args := map[string]any{"by": by}
	if h != "" {
		args["session"] = h
	}
	return mcptest.NewClient(t, srv.MCP(), "").Call(context.Background(), "tally_add", args, modern(nil))
}

// tallyOf returns the tally of session h as a fresh server on st reads it
// from the store.
func tallyOf(t *testing.T, st store.Store, h string) int {
	t.Helper()
	srv := newReplica(t, st, countingSection(false, nil), nil)
	var res struct{ Contents []struct{ Text string } }
	raw, rpcErr := mcptest.NewClient(t, srv.MCP(), "").Send(context.Background(), "resources/read",
		map[string]any{"uri": tallyURI, "_meta": modern(map[string]any{server.MetaSession: h})})
	if rpcErr != nil {
		t.Fatalf("reading the tally: %s", rpcErr.Message)
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) != 1 {
		t.Fatalf("reading the tally: %s", raw)
	}
	var n int
	fmt.Sscan(res.Contents[0].Text, &n)
	return n
}

// TestRerunOnConflict: replica b runs a call of tally_add on a revision
// that replica a overtakes before b commits. A call of a Contained
// section's tool runs again on the new revision, up to five runs in all,
// then answers ChangedMessage; a call of any other runs once and answers
// ChangedMessage. Nothing of a run that lost is kept.
func TestRerunOnConflict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		contained bool
		overtakes int // the runs of b that a overtakes
		runs      int
		changed   bool // b answers ChangedMessage
	}{
		{"contained, overtaken once", true, 1, 2, false},
		{"contained, overtaken each time", true, 100, 5, true},
		{"not contained", false, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			a := newReplica(t, st, countingSection(tc.contained, nil), nil)
			h := add(t, a, "", 1).Session()
			runs := 0
			b := newReplica(t, st, countingSection(tc.contained, func() {
				if runs++; runs <= tc.overtakes {
					if r := add(t, a, h, 10); r.IsError {
						t.Errorf("a: %+v", r)
					}
				}
			}), nil)
			r := add(t, b, h, 100)
			if runs != tc.runs {
				t.Errorf("b ran the call %d times, want %d", runs, tc.runs)
			}
			overtaken := min(tc.overtakes, tc.runs)
			want := 1 + 10*overtaken
			if tc.changed {
				if !r.IsError || r.Text() != sessions.ChangedMessage {
					t.Errorf("b: %+v, want %q", r, sessions.ChangedMessage)
				}
			} else {
				want += 100
				if r.IsError || r.StructuredContent["count"] != float64(want) {
					t.Errorf("b: %+v, want the count %d", r, want)
				}
			}
			if got := tallyOf(t, st, h); got != want {
				t.Errorf("stored: %d, want %d", got, want)
			}
		})
	}
}

// subscriber is a connection subscribed to resources: a registered client
// session that implements mcp-go's SessionWithResourceSubscriptions.
type subscriber struct {
	*mcptest.Client
	uris []string
}

func (s subscriber) SubscribeToResource(string)     {}
func (s subscriber) UnsubscribeFromResource(string) {}
func (s subscriber) SubscribedResources() []string  { return slices.Clone(s.uris) }
func (s subscriber) IsSubscribedToResource(uri string) bool {
	return slices.Contains(s.uris, uri)
}

// subscribe connects a client to srv, subscribed to the tally.
func subscribe(t *testing.T, srv *server.Server, id string) subscriber {
	t.Helper()
	sub := subscriber{Client: mcptest.NewClient(t, srv.MCP(), id), uris: []string{tallyURI}}
	sub.Initialize()
	if err := srv.MCP().RegisterSession(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// updates collects the resources/updated notifications a client gets.
type updates struct {
	t    *testing.T
	c    *mcptest.Client
	seen []string
}

// take adds the notifications that arrived and returns how many there
// were in all.
func (u *updates) take() int {
	for _, n := range u.c.Notifications() {
		if n.Method != string(mcp.MethodNotificationResourceUpdated) {
			continue
		}
		u.seen = append(u.seen, fmt.Sprint(n.Params.AdditionalFields["uri"]))
	}
	return len(u.seen)
}

// await waits until n have arrived in all, and checks that no more did.
func (u *updates) await(n int) {
	u.t.Helper()
	for end := time.Now().Add(5 * time.Second); u.take() < n && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
	}
	if len(u.seen) != n || slices.ContainsFunc(u.seen, func(s string) bool { return s != tallyURI }) {
		u.t.Fatalf("resources/updated for %q, want %d for %s", u.seen, n, tallyURI)
	}
}

// TestNotificationsCrossReplicas: a connection on replica a subscribed to
// its session's tally is told once when it changes the tally itself, and
// once when a client of replica b changes it by handle; a's copy of the
// session, now stale, is dropped, so that its next call commits on the
// latest revision instead of failing.
func TestNotificationsCrossReplicas(t *testing.T) {
	st := store.NewMemory(store.Options{})
	a := newReplica(t, st, countingSection(false, nil), nil)
	b := newReplica(t, st, countingSection(false, nil), nil)
	sub := subscribe(t, a, "watching")
	got := &updates{t: t, c: sub.Client}
	r := sub.Call(context.Background(), "tally_add", map[string]any{"by": 1}, nil)
	if r.IsError {
		t.Fatalf("the subscriber's call: %+v", r)
	}
	h := r.Session()
	got.await(1) // sent before the result

	if r := add(t, b, h, 2); r.IsError {
		t.Fatalf("b: %+v", r)
	}
	// The watch reports a's own commit before b's: had the first been
	// told again, there would be three.
	got.await(2)

	if r := sub.Call(context.Background(), "tally_add", map[string]any{"by": 4}, nil); r.IsError || r.StructuredContent["count"] != float64(7) {
		t.Errorf("the subscriber's call after b's: %+v", r)
	}
	got.await(3)
	if n := tallyOf(t, st, h); n != 7 {
		t.Errorf("stored: %d, want 7", n)
	}
}

// flakyWatch is a store whose watches wait until gate is closed, the
// first ones then failing, and which records the contexts of those that
// start.
type flakyWatch struct {
	store.Store
	gate  chan struct{}
	fails atomic.Int32
	mu    sync.Mutex
	ctxs  []context.Context
}

func (f *flakyWatch) Watch(ctx context.Context) (<-chan store.Change, error) {
	<-f.gate
	if f.fails.Add(-1) >= 0 {
		return nil, store.ErrUnavailable
	}
	ch, err := f.Store.Watch(ctx)
	if err == nil {
		f.mu.Lock()
		f.ctxs = append(f.ctxs, ctx)
		f.mu.Unlock()
	}
	return ch, err
}

// started returns the contexts of the watches that started.
func (f *flakyWatch) started() []context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ctxs)
}

// TestWatchRestarts: replica a cannot watch the store at first, then its
// watch fails twice, is logged each time and started again. Once it runs,
// a catches up with what it could not see: the change replica b made
// meanwhile to a session a holds is told to its subscriber, and a's copy
// dropped; later changes are seen as they come. Close stops the watch.
func TestWatchRestarts(t *testing.T) {
	inner := store.NewMemory(store.Options{})
	st := &flakyWatch{Store: inner, gate: make(chan struct{})}
	st.fails.Store(2)
	var log syncWriter
	a := newReplica(t, st, countingSection(false, nil), slog.New(slog.NewTextHandler(&log, nil)))
	// b runs a call again when its copy of the session is stale.
	b := newReplica(t, inner, countingSection(true, nil), nil)
	sub := subscribe(t, a, "watching")
	got := &updates{t: t, c: sub.Client}
	h := sub.Call(context.Background(), "tally_add", map[string]any{"by": 1}, nil).Session()
	got.await(1)
	if r := add(t, b, h, 2); r.IsError {
		t.Fatalf("b: %+v", r)
	}

	close(st.gate)
	got.await(2)
	if n := strings.Count(log.String(), "watching the session store failed"); n != 2 {
		t.Errorf("%d failures logged, want 2:\n%s", n, log.String())
	}
	if r := sub.Call(context.Background(), "tally_add", map[string]any{"by": 4}, nil); r.IsError || r.StructuredContent["count"] != float64(7) {
		t.Errorf("the subscriber's call after b's: %+v", r)
	}
	got.await(3)
	if r := add(t, b, h, 8); r.IsError {
		t.Fatalf("b: %+v", r)
	}
	got.await(4)

	a.Close()
	if ctx := st.started()[0]; ctx.Err() == nil {
		t.Error("the watch runs on after Close")
	}
}

// quietShared is a memory store that says other processes write to it,
// and whose watch never starts (so that the replica does not catch up
// with the store when it would): a replica on it learns of another's
// commits only by checking its copy of a session against the store.
type quietShared struct{ *store.Memory }

func (quietShared) Shared() bool { return true }

func (quietShared) Sharing() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (quietShared) Watch(ctx context.Context) (<-chan store.Change, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestFreshOnSharedStore: on a store that other processes write, a replica
// checks its copy of a session against the store before a call runs, and
// before a resource is read. Replica a's copy is replaced by b's commits;
// a's next call, of a tool whose section is not contained (which could not
// run again after losing its commit), runs once on the latest revision, and
// a's resource shows b's commit at once. Without the check, the call would
// answer ChangedMessage and the read show a's old copy.
func TestFreshOnSharedStore(t *testing.T) {
	st := quietShared{store.NewMemory(store.Options{})}
	runs := 0
	a := newReplica(t, st, countingSection(false, func() { runs++ }), nil)
	b := newReplica(t, st, countingSection(false, nil), nil)
	h := add(t, a, "", 1).Session()
	for i := 1; i <= 3; i++ {
		if r := add(t, b, h, 10); r.IsError {
			t.Fatalf("b: %+v", r)
		}
		var res struct{ Contents []struct{ Text string } }
		raw, rpcErr := mcptest.NewClient(t, a.MCP(), "").Send(context.Background(), "resources/read",
			map[string]any{"uri": tallyURI, "_meta": modern(map[string]any{server.MetaSession: h})})
		if want := fmt.Sprint(1 + 110*(i-1) + 10); rpcErr != nil || json.Unmarshal(raw, &res) != nil || len(res.Contents) != 1 || res.Contents[0].Text != want {
			t.Fatalf("a's tally after b's commit: %s %v, want %s", raw, rpcErr, want)
		}
		runs = 0
		r := add(t, a, h, 100)
		if want := float64(1 + 110*i); r.IsError || r.StructuredContent["count"] != want || runs != 1 {
			t.Fatalf("a after b's commit: %+v in %d runs, want the count %v in one", r, runs, want)
		}
	}
}

// TestContainedWriteOnSharedStore: a call that only changes its session's
// state is not checked against the store before it runs. On a copy that
// another replica replaced, a call that changes the state loses its
// compare-and-swap, and one that fails or changes nothing is found stale
// after it ran: each runs again on the latest revision, so that nothing
// is lost and no answer comes from the old copy.
func TestContainedWriteOnSharedStore(t *testing.T) {
	st := quietShared{store.NewMemory(store.Options{})}
	runs := 0
	a := newReplica(t, st, countingSection(true, func() { runs++ }), nil)
	b := newReplica(t, st, countingSection(true, nil), nil)
	h := add(t, a, "", 1).Session()
	count := 1
	for _, tc := range []struct {
		name string
		by   func(count int) int // what a adds, given the latest count
	}{
		{"a change", func(int) int { return 100 }},
		{"a failure on the old copy", func(count int) int { return 5 - count }},
		{"no change", func(int) int { return 0 }},
	} {
		if r := add(t, b, h, 10); r.IsError {
			t.Fatalf("%s: b: %+v", tc.name, r)
		}
		count += 10
		by := tc.by(count)
		runs = 0
		r := add(t, a, h, by)
		count += by
		if r.IsError || r.StructuredContent["count"] != float64(count) || runs != 2 {
			t.Fatalf("%s: a after b's commit: %+v in %d runs, want the count %v in two", tc.name, r, runs, count)
		}
	}
}
