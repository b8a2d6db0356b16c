package sessions_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
)

// counter is a STATE slice of the example's sessions.
var counter = session.NewKey[int]("example.count")

// Example shows a request's use of its session: a connection's first
// request starts the session the process names, a call changes its state
// and commits it, and a manager on the same store later continues it by
// its handle.
func Example() {
	st := store.NewMemory(store.Options{})
	defer st.Close()
	registry := session.NewRegistry()
	session.Persist(registry, counter, session.JSON[int]())
	m := sessions.New(sessions.Options{Registry: registry, Store: st})

	ctx := context.Background()
	u, err := m.Use(ctx, sessions.Request{Conn: "stdio", Name: "my-project", Owner: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	tx, err := u.Session.Begin() // under the session's call lock, in a server
	if err != nil {
		log.Fatal(err)
	}
	session.Set(u.Session, counter, 3)
	if err := u.Commit(ctx, &sessions.Commit{CallID: "c1", Tool: "count", Tx: tx}); err != nil {
		log.Fatal(err) // sessions.ErrChanged: another process committed first
	}
	tx.Commit()
	u.Release()
	m.Close()

	// Another process, say, on the same store.
	m = sessions.New(sessions.Options{Registry: registry, Store: st})
	defer m.Close()
	u, err = m.Use(ctx, sessions.Request{Handle: "my-project", Owner: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer u.Release()
	n, _ := session.Get(u.Session, counter)
	fmt.Println(u.Handle, n)

	_, err = m.Use(ctx, sessions.Request{Handle: "my-project", Owner: "mallory"})
	fmt.Println(sessions.Message(err))
	// Output:
	// my-project 3
	// Unknown session; start a new one by calling without 'session'.
}
