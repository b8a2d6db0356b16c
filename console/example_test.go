package console_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/wink-mcp/wink-mcp/console"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/store"
)

// ExampleNew serves the console of a server, for the viewers whose token
// Verify accepts: here one token, alice's.
func ExampleNew() {
	tree, err := sections.NewTree(planning.New(planning.React))
	if err != nil {
		log.Fatal(err)
	}
	st := store.NewMemory(store.Options{})
	srv, err := server.New(server.Options{Name: "example", Version: "1", Tree: tree, Store: st})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := console.New(console.Options{
		Server: srv,
		Store:  st,
		Verify: func(_ context.Context, token string) (identity.Identity, error) {
			if token != "alice-token" { // compare in constant time in real code
				return identity.Identity{}, errors.New("invalid token")
			}
			return identity.Identity{Subject: "alice"}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(console.Path, c)
	mux.Handle(console.Path+"/", c)
	hs := httptest.NewServer(mux)
	defer hs.Close()

	for _, token := range []string{"", "alice-token"} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+console.Path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	// Output:
	// 401 Unauthorized
	// 200 OK
}
