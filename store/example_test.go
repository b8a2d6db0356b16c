package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/wink-mcp/wink-mcp/store"
)

// A session's state is a head that refers to blobs by hash. A commit writes
// the new blobs, then moves the head from the revision it was loaded at.
func ExampleOpenEmbedded() {
	dir, err := os.MkdirTemp("", "wink-state-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := store.OpenEmbedded(ctx, dir, store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	rev, err := s.Create(ctx, "s_example", []byte(`{}`))
	if err != nil {
		log.Fatal(err)
	}
	content := []byte("hello\n")
	head := fmt.Sprintf(`{"hello.txt":%q}`, store.Hash(content))
	if _, err := s.Commit(ctx, "s_example", rev, []byte(head), map[string][]byte{store.Hash(content): content}); err != nil {
		log.Fatal(err)
	}

	// Committing again on the revision the first commit replaced fails.
	_, err = s.Commit(ctx, "s_example", rev, []byte(`{}`), nil)
	fmt.Println(errors.Is(err, store.ErrConflict))

	h, err := s.Load(ctx, "s_example")
	if err != nil {
		log.Fatal(err)
	}
	b, err := s.Blob(ctx, "s_example", store.Hash(content))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n%s", h.Data, b)
	// Output:
	// true
	// {"hello.txt":"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}
	// hello
}
