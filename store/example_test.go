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

// The contents of a session's files are stored as located blobs before
// the commit whose head names them; each is read back by its name, and
// goes when a later sweep finds it dead.
func ExampleJetStream_PutData() {
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
	names, err := s.PutData(ctx, "s_example", [][]byte{[]byte("hello\n"), []byte("world\n")})
	if err != nil {
		log.Fatal(err)
	}
	head := fmt.Sprintf(`{"hello.txt":%q}`, names[0]) // world.txt is left out
	rev, err = s.Commit(ctx, "s_example", rev, []byte(head), nil)
	if err != nil {
		log.Fatal(err)
	}
	b, err := s.Blob(ctx, "s_example", names[0])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", b)

	sw, err := s.Sweep(ctx, "s_example", rev, func(name string) bool { return name == names[0] })
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.Blob(ctx, "s_example", names[1])
	fmt.Println(sw.Removed, sw.Kept, errors.Is(err, store.ErrNotFound))
	// Output:
	// hello
	// 1 1 true
}
