package workspace

import (
	"fmt"
	"maps"
	"testing"

	"github.com/wink-mcp/wink-mcp/statetree"
)

// blobStore keeps the blobs a test's encodings put.
type blobStore map[string][]byte

func (s blobStore) get(h string) ([]byte, error) {
	b, ok := s[h]
	if !ok {
		return nil, fmt.Errorf("no blob %s", h)
	}
	if statetree.Hash(b) != h {
		return nil, fmt.Errorf("blob %s: wrong content", h)
	}
	return b, nil
}

// storeTree passes to put the blobs of root that prev, the root stored
// before, did not hold, as EncodeTree does.
func storeTree(root, prev *node, put statetree.Put) error {
	w := &Workspace{st: &memStore{}}
	w.st.(*memStore).t.Store(root)
	_, _, err := w.EncodeTree(prev, put)
	return err
}

// treeFiles returns every file of the tree under root by path.
func treeFiles(t *testing.T, root *node) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := root.walk("", func(p string, n *node) error {
		if !n.dir {
			b, err := n.file.bytes()
			out[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLargeDirectoryStored: in a directory of 10,000 files, a write, a
// removal, a rename and a move of the directory each put a few blobs of a
// few KiB, whatever the directory's size; what is stored loads back to the
// same files, and the tree hashes as the same files written at once (a
// full re-encoding).
func TestLargeDirectoryStored(t *testing.T) {
	s := &memStore{}
	s.t.Store(emptyDir)
	for i := range 10000 {
		if err := s.writeFile(fmt.Sprintf("big/f%05d.txt", i), fmt.Appendf(nil, "file %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	stored := blobStore{}
	prev := s.t.Load()
	if err := storeTree(prev, nil, func(h string, b []byte) { stored[h] = b }); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"write a new file", func() error { return s.writeFile("big/new.txt", []byte("new\n")) }},
		{"change a file", func() error { return s.writeFile("big/f05000.txt", []byte("changed\n")) }},
		{"remove a file", func() error { _, err := s.remove("big/f00007.txt"); return err }},
		{"rename a file", func() error { return s.move("big/f09999.txt", "big/a-renamed.txt") }},
		{"move the directory", func() error { return s.move("big", "moved/big") }},
	} {
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		root := s.t.Load()
		put, bytes := 0, 0
		if err := storeTree(root, prev, func(h string, b []byte) { stored[h] = b; put++; bytes += len(b) }); err != nil {
			t.Fatal(err)
		}
		// A leaf and a node on each of two levels for each directory
		// changed (two for a rename), the directories above, a file.
		if put > 10 || bytes > 24<<10 {
			t.Errorf("%s: put %d blobs of %d bytes; want at most 10 and 24 KiB", op.name, put, bytes)
		}
		prev = root
		h, err := root.hash()
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := decode(h, stored.get)
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		want := treeFiles(t, root)
		if got := treeFiles(t, loaded); !maps.Equal(got, want) {
			t.Fatalf("%s: loaded %d files, want %d, or other contents", op.name, len(got), len(want))
		}
		fresh := emptyDir
		for p, c := range want {
			if fresh, err = with(fresh, p, fileNode([]byte(c))); err != nil {
				t.Fatal(err)
			}
		}
		if hf, err := fresh.hash(); err != nil || hf != h {
			t.Fatalf("%s: the tree hashes %s, the same files written at once %s (%v)", op.name, h, hf, err)
		}
	}
}

// TestEncodeCountsNodes: storing a call that wrote one file in a
// directory of 20,000 encodes a bounded number of directory blobs (counted,
// not timed), as one in an empty workspace does, within a few.
func TestEncodeCountsNodes(t *testing.T) {
	count := func(files int) int {
		s := &memStore{}
		s.t.Store(emptyDir)
		for i := range files {
			if err := s.writeFile(fmt.Sprintf("src/f%05d.go", i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		prev := s.t.Load()
		if err := storeTree(prev, nil, func(string, []byte) {}); err != nil {
			t.Fatal(err)
		}
		if err := s.writeFile("src/new.go", []byte("new")); err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := storeTree(s.t.Load(), prev, func(string, []byte) { n++ }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	small, large := count(0), count(20000)
	if large > small+6 {
		t.Errorf("a write in a directory of 20,000 files puts %d blobs, one in an empty workspace %d; want at most 6 more", large, small)
	}
}

// oldEncode stores the tree under n as the build before merkle.Map did
// (format 2): every directory one blob of all its entries, however many.
// It returns n's hash.
func oldEncode(t *testing.T, n *node, put func(string, []byte)) string {
	if !n.dir {
		data, err := n.file.bytes()
		if err != nil {
			t.Fatal(err)
		}
		return statetree.PutFile(data, put)
	}
	var entries []statetree.Entry
	for name, kid := range n.children().All() {
		entries = append(entries, statetree.Entry{Name: name, Dir: kid.dir, Size: kid.size, Hash: oldEncode(t, kid, put)})
	}
	b, err := statetree.EncodeDir(entries)
	if err != nil {
		t.Fatal(err)
	}
	h := statetree.Hash(b)
	put(h, b)
	return h
}

// TestOldTreeContinued: a tree stored by the former build, with a
// directory of 5,000 entries in one blob, loads under its hash, stores
// nothing while unchanged, and after a write stores its large directory
// as a tree and loads back with every file.
func TestOldTreeContinued(t *testing.T) {
	s := &memStore{}
	s.t.Store(emptyDir)
	for i := range 5000 {
		if err := s.writeFile(fmt.Sprintf("old/f%05d.txt", i), fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.writeFile("small/a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	stored := blobStore{}
	h := oldEncode(t, s.t.Load(), func(h string, b []byte) { stored[h] = b })
	want := treeFiles(t, s.t.Load())
	loaded, err := decode(h, stored.get)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := loaded.hash(); err != nil || got != h {
		t.Fatalf("the old tree loads with hash %s, want %s (%v)", got, h, err)
	}
	if err := storeTree(loaded, loaded, func(string, []byte) { t.Error("an unchanged old tree put a blob") }); err != nil {
		t.Fatal(err)
	}
	s.t.Store(loaded)
	if err := s.writeFile("old/new.txt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	want["old/new.txt"] = "new"
	if err := storeTree(s.t.Load(), loaded, func(h string, b []byte) { stored[h] = b }); err != nil {
		t.Fatal(err)
	}
	h2, _ := s.t.Load().hash()
	again, err := decode(h2, stored.get)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeFiles(t, again); !maps.Equal(got, want) {
		t.Fatalf("continued old tree: %d files, want %d", len(got), len(want))
	}
	if again.children().Len() != 2 {
		t.Errorf("root has %d entries, want 2", again.children().Len())
	}
}
