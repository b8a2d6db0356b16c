package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// The marks section's state: the marks of the read-only calls that
// succeeded, recorded twice by the marking policy, in two slices.
var (
	marksA = session.NewKey[[]int]("marks.a")
	marksB = session.NewKey[[]int]("marks.b")
)

// markParams name a mark; a negative one fails in the policy's OnResult,
// after it has recorded it in marksA.
type markParams struct {
	N int `json:"n" jsonschema:"The mark."`
}

// markingPolicy records each successful "mark" call in marksA, then,
// after letting other goroutines run, in marksB: a call that saw one
// without the other saw the mark half recorded. It denies a "check" call
// that sees them differ.
type markingPolicy struct{}

func (markingPolicy) Name() string { return "marking" }

func (markingPolicy) Check(call *tools.Call) error {
	if call.Tool.Name() != "check" {
		return nil
	}
	a, _ := session.Get(call.Session, marksA)
	b, _ := session.Get(call.Session, marksB)
	if !slices.Equal(a, b) {
		return policy.Deny("marking", fmt.Sprintf("half recorded: %v against %v", a, b))
	}
	return nil
}

func (markingPolicy) OnResult(call *tools.Call, _ *tools.Outcome) error {
	if call.Tool.Name() != "mark" {
		return nil
	}
	n := call.Params.(markParams).N
	add := func(k session.Key[[]int]) {
		old, _ := session.Get(call.Session, k)
		session.Set(call.Session, k, append(slices.Clone(old), n))
	}
	add(marksA)
	runtime.Gosched()
	if n < 0 {
		return errors.New("a negative mark")
	}
	add(marksB)
	return nil
}

// waiters is the number of "wait" calls that wait for each other.
const waiters = 8

// marksSection returns the section of the tools mark, wait and check.
func marksSection() *sections.Section {
	var inside atomic.Int32 // the "wait" calls running
	allInside := make(chan struct{})
	return &sections.Section{
		Key:      "marks",
		Title:    "Marks",
		Guidance: "Read-only calls that record marks.",
		Setup: func(r *session.Registry) {
			session.Persist(r, marksA, session.JSON[[]int]())
			session.Persist(r, marksB, session.JSON[[]int]())
		},
		Tools: []*tools.Tool{
			tools.New("mark", "Succeed; the policy records the mark.", tools.Annotations{Title: "Mark", ReadOnly: true},
				func(*tools.Context, markParams) (tools.Result[any], error) { return tools.OK[any]("Marked.", nil), nil }),
			tools.New("wait", "Wait until every wait call is running.", tools.Annotations{Title: "Wait", ReadOnly: true},
				func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
					if inside.Add(1) == waiters {
						close(allInside)
					}
					select {
					case <-allInside:
						return tools.OK[any]("All in.", nil), nil
					case <-ctx.Done():
						return tools.Fail[any]("Alone."), nil
					}
				}),
			tools.New("check", "Change state; the policy denies it if it sees a mark half recorded.", tools.Annotations{Title: "Check"},
				func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
					a, _ := session.Get(ctx.Session, marksA)
					b, _ := session.Get(ctx.Session, marksB)
					if !slices.Equal(a, b) {
						return tools.Fail[any](fmt.Sprintf("half recorded: %v against %v", a, b)), nil
					}
					session.Set(ctx.Session, marksA, slices.Clone(a))
					return tools.OK[any]("Whole.", nil), nil
				}),
		},
	}
}

// newMarksServer returns a server with the marks section and the marking
// policy, and a client of it.
func newMarksServer(t *testing.T) (*server.Server, *mcptest.Client) {
	t.Helper()
	tree, err := sections.NewTree(marksSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree, Deadline: 5 * time.Second,
		Policies: []policy.Policy{markingPolicy{}},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, mcptest.NewClient(t, srv.MCP(), "s1")
}

// TestReadOnlyCallsRunTogether: the calls of a read-only tool on one
// session run at the same time; each waits until all are running.
func TestReadOnlyCallsRunTogether(t *testing.T) {
	_, cs := newMarksServer(t)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			if r := cs.Call(context.Background(), "wait", map[string]any{}, nil); r.IsError {
				t.Errorf("wait: %s", r.Text())
			}
		})
	}
	wg.Wait()
}

// TestReadOnlyCallsKeepTheirRecords runs read-only calls on one session,
// whose policy records each success in two steps, with calls that change
// state: every success is recorded and no failure is, whatever failed at
// the same time; and a call that changes state never sees a record half
// made.
func TestReadOnlyCallsKeepTheirRecords(t *testing.T) {
	srv, cs := newMarksServer(t)
	ctx := context.Background()
	var want []int
	var wg sync.WaitGroup
	for i := range 96 {
		if i%6 == 0 {
			wg.Go(func() {
				if r := cs.Call(ctx, "check", map[string]any{}, nil); r.IsError {
					t.Errorf("check: %s", r.Text())
				}
			})
			continue
		}
		n := i
		if i%3 == 0 {
			n = -i
		} else {
			want = append(want, n)
		}
		wg.Go(func() {
			r := cs.Call(ctx, "mark", map[string]any{"n": n}, nil)
			if r.IsError != (n < 0) {
				t.Errorf("mark %d: isError %v: %s", n, r.IsError, r.Text())
			}
		})
	}
	wg.Wait()
	r := cs.Call(ctx, "check", map[string]any{}, nil)
	if r.IsError {
		t.Fatalf("check after all: %s", r.Text())
	}
	s, err := srv.Sessions().Get(cs.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := session.Get(s, marksA)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("marks = %v\nwant %v", got, want)
	}
}
