package workspace_test

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// A session whose store keeps files' contents as they are written gives
// its memory workspace a stash: each write stores the content at once,
// and the tree names the file by the located name the stash returned, so
// that encoding the tree puts its directories only.
func ExampleWorkspace_SetStash() {
	b, err := workspace.NewMemory(nil)
	if err != nil {
		panic(err)
	}
	r := session.NewRegistry()
	workspace.New(b, workspace.Options{}).Setup(r)
	s, err := r.NewSession("example")
	if err != nil {
		panic(err)
	}
	defer s.Close()
	w := workspace.From(s)

	var seq uint64
	w.SetStash(func(content []byte) (string, error) {
		seq++ // the store's sequence of the message holding content
		name := blobname.Located(blobname.Hash(content), seq)
		fmt.Printf("stashed %d bytes at %d\n", len(content), seq)
		return name, nil
	})
	_ = w.WriteFile("src/main.go", []byte("package main\n"))
	_ = w.WriteFile("src/main.go", []byte("package main\n")) // the same content: kept
	_ = w.WriteFile("README", []byte("hello\n"))

	put := 0
	if _, _, err := w.EncodeTree(nil, func(string, []byte) { put++ }); err != nil {
		panic(err)
	}
	fmt.Println(put, "directory blobs put")
	// Output:
	// stashed 13 bytes at 1
	// stashed 6 bytes at 2
	// 2 directory blobs put
}
