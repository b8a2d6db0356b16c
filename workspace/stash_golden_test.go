package workspace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// TestEncodingWithoutStashUnchanged: without a stash, a tree encodes to
// the blobs it did before format 6: the same root hash as build 955e8aa
// gave this tree (small, empty and chunked files, a directory of more
// than merkle.SmallMax entries).
func TestEncodingWithoutStashUnchanged(t *testing.T) {
	const want = "bdb314b5964788e4260d4bb28f4b7fd50e4d5738cfa3baf8782c7cd08beba792 318"
	m := &memStore{}
	m.t.Store(emptyDir)
	files := map[string][]byte{
		"a.txt":     []byte("hello\n"),
		"empty":     nil,
		"d/big.bin": bytes.Repeat([]byte("0123456789abcdef"), statetree.ChunkSize/8+3),
	}
	for i := range 300 {
		files[fmt.Sprintf("many/f%03d.go", i)] = fmt.Appendf(nil, "package f%d\n", i)
	}
	for p, data := range files {
		if err := m.writeFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
	w := &Workspace{st: m, kind: "memory"}
	stored := blobStore{}
	root, _, err := w.EncodeTree(nil, func(h string, b []byte) { stored[h] = b })
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %d", root, len(stored)); got != want {
		t.Fatalf("the tree's root and blobs: %s, want %s", got, want)
	}
}
