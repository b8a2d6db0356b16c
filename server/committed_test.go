package server_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// shelfItems is the shelf section's state, which its resource shows.
var shelfItems = session.NewKey[int]("shelf.items")

// shelved is the shelf section's event.
type shelved struct{}

// shelfURI is the shelf section's resource.
const shelfURI = "wink://shelf/items"

// shelfSection is a section whose tool adds an item, says so on changed,
// waits on resume, and then fails: a call that others could watch half
// done.
func shelfSection(changed, resume chan struct{}) *sections.Section {
	ann := tools.Annotations{Title: "Shelf"}
	return &sections.Section{
		Key:      "shelf",
		Title:    "Shelf",
		Guidance: "A shelf of items.",
		Setup: func(r *session.Registry) {
			session.Persist(r, shelfItems, session.JSON[int]())
			session.On(r, shelfItems, func(old int, _ bool, _ shelved) (int, error) { return old + 1, nil })
		},
		Tools: []*tools.Tool{
			tools.New("shelf_add", "Add an item.", ann,
				func(ctx *tools.Context, _ noParams) (tools.Result[counter], error) {
					if err := ctx.Dispatch(shelved{}); err != nil {
						return tools.Result[counter]{}, err
					}
					return tools.OK("Added.", counter{}), nil
				}),
			tools.New("shelf_add_then_fail", "Add an item, wait, then fail.", ann,
				func(ctx *tools.Context, _ noParams) (tools.Result[counter], error) {
					if err := ctx.Dispatch(shelved{}); err != nil {
						return tools.Result[counter]{}, err
					}
					changed <- struct{}{}
					<-resume
					return tools.Fail[counter]("Changed my mind."), nil
				}),
		},
		Resources: []sections.Resource{{
			URI: shelfURI, Name: "Items", Description: "How many items the shelf holds.", MIMEType: "text/plain",
			Read: func(_ context.Context, s *session.Session) (string, error) {
				n, _ := session.Get(s, shelfItems)
				return strconv.Itoa(n), nil
			},
		}},
	}
}

// TestResourcesSeeCommittedStateOnly: while a call that changed a
// section's state has yet to end, resources/read of that state answers
// what the last commit left, through the call's own connection and
// through another on the same session; the call fails, and nothing of it
// is ever seen. A call that commits is seen once it has.
func TestResourcesSeeCommittedStateOnly(t *testing.T) {
	changed, resume := make(chan struct{}), make(chan struct{})
	tree, err := sections.NewTree(shelfSection(changed, resume))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Deadline: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := mcptest.NewClient(t, srv.MCP(), "s1")
	ctx := context.Background()
	if r := c.Call(ctx, "shelf_add", map[string]any{}, nil); r.IsError {
		t.Fatalf("shelf_add: %s", r.Text())
	}
	h := readText(t, c, server.SessionURI, nil)
	other := mcptest.NewClient(t, srv.MCP(), "s2")
	meta := modern(map[string]any{server.MetaSession: h})

	done := make(chan mcptest.Result)
	go func() { done <- c.Call(ctx, "shelf_add_then_fail", map[string]any{}, nil) }()
	<-changed
	if got := readText(t, c, shelfURI, nil); got != "1" {
		t.Errorf("during the call its connection reads %s items, want 1", got)
	}
	if got := readText(t, other, shelfURI, meta); got != "1" {
		t.Errorf("during the call another connection on the session reads %s items, want 1", got)
	}
	close(resume)
	if r := <-done; !r.IsError {
		t.Fatalf("shelf_add_then_fail = %s, want a failure", r.Text())
	}
	if got := readText(t, c, shelfURI, nil); got != "1" {
		t.Errorf("after the failed call: %s items, want 1", got)
	}
	if r := c.Call(ctx, "shelf_add", map[string]any{}, nil); r.IsError {
		t.Fatalf("shelf_add: %s", r.Text())
	}
	if got := readText(t, other, shelfURI, meta); got != "2" {
		t.Errorf("after a call that commits: %s items, want 2", got)
	}
}
