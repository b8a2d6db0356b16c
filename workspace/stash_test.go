package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/statetree"
)

// stashRecorder is a stash as a session's store gives one: it keeps each
// content at the next sequence and names it by its located name, or
// fails with err while err is set.
type stashRecorder struct {
	seq      uint64
	contents map[string][]byte // by located name
	calls    int
	err      error
}

func newStashRecorder() *stashRecorder {
	return &stashRecorder{contents: map[string][]byte{}}
}

func (r *stashRecorder) stash(content []byte) (string, error) {
	r.calls++
	if r.err != nil {
		return "", r.err
	}
	r.seq++
	name := blobname.Located(blobname.Hash(content), r.seq)
	r.contents[name] = bytes.Clone(content)
	return name, nil
}

// get serves the stashed contents and the blobs of stored, checked as
// statetree.Decode checks them.
func (r *stashRecorder) get(stored blobStore) statetree.Getter {
	return func(name string) ([]byte, error) {
		if b, ok := r.contents[name]; ok {
			return b, nil
		}
		return stored.get(name)
	}
}

// stashedStore returns an empty memory workspace whose writes go
// through a new stashRecorder.
func stashedStore() (*Workspace, *memStore, *stashRecorder) {
	m := &memStore{}
	m.t.Store(emptyDir)
	w := &Workspace{st: m, kind: "memory"}
	r := newStashRecorder()
	w.SetStash(r.stash)
	return w, m, r
}

// entryAt returns the entry of path p in the tree whose blobs are in
// stored, read from the directory blobs.
func entryAt(t *testing.T, root string, p string, get statetree.Getter) statetree.Entry {
	t.Helper()
	dirs := strings.Split(p, "/")
	h := root
	for i, name := range dirs {
		b, err := get(h)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := statetree.DecodeDir(b)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range entries {
			if e.Name == name {
				if i == len(dirs)-1 {
					return e
				}
				h, found = e.Hash, true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no entry %q", p, name)
		}
	}
	panic("unreachable")
}

// TestWriteStashes: a write stashes the file's content once, at once,
// the tree names it by the located name the stash returned, and
// EncodeTree puts the directories and not the content; after
// SetStash(nil), a write stashes nothing.
func TestWriteStashes(t *testing.T) {
	w, m, r := stashedStore()
	data := []byte("hello\n")
	if err := w.WriteFile("src/a.txt", data); err != nil {
		t.Fatal(err)
	}
	if r.calls != 1 {
		t.Fatalf("%d stashes, want 1", r.calls)
	}
	name := blobname.Located(blobname.Hash(data), 1)
	if n, _ := lookup(m.t.Load(), "src/a.txt"); n.key != name {
		t.Fatalf("the file's key is %q before any encoding, want %q", n.key, name)
	}
	stored := blobStore{}
	root, _, err := w.EncodeTree(nil, func(h string, b []byte) { stored[h] = b })
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 {
		t.Fatalf("put %d blobs, want the 2 directories", len(stored))
	}
	if _, ok := stored[blobname.Hash(data)]; ok {
		t.Fatal("the stashed content was put again")
	}
	if e := entryAt(t, root, "src/a.txt", stored.get); e.Hash != name || e.Size != int64(len(data)) {
		t.Fatalf("entry %+v, want of %s", e, name)
	}
	if v, _, err := w.Version("src/a.txt"); err != nil || v != hashVersion(data) {
		t.Fatalf("version %q, %v; want %q, the content's", v, err, hashVersion(data))
	}
	w.SetStash(nil)
	if err := w.WriteFile("src/b.txt", data); err != nil {
		t.Fatal(err)
	}
	if n, _ := lookup(m.t.Load(), "src/b.txt"); r.calls != 1 || n.key != "" {
		t.Fatalf("without a stash: %d stashes, key %q", r.calls, n.key)
	}
}

// TestFailedStashChangesNothing: a stash that fails, or gives a name
// that is not located, fails the write with an error that says so, and
// leaves the tree as it was; the next write stashes again.
func TestFailedStashChangesNothing(t *testing.T) {
	w, m, r := stashedStore()
	if err := w.WriteFile("a.txt", []byte("one")); err != nil {
		t.Fatal(err)
	}
	before := m.t.Load()
	r.err = errors.New("store unavailable")
	for _, p := range []string{"a.txt", "new/b.txt"} {
		err := w.WriteFile(p, []byte("two"))
		if err == nil || !strings.Contains(err.Error(), "could not be stored") || !errors.Is(err, r.err) {
			t.Fatalf("%s: %v, want the stash's error", p, err)
		}
		if m.t.Load() != before {
			t.Fatalf("%s: the tree changed", p)
		}
	}
	r.err = nil
	w.SetStash(func(content []byte) (string, error) { return blobname.Hash(content), nil })
	if err := w.WriteFile("a.txt", []byte("two")); err == nil || !strings.Contains(err.Error(), "not a located name") || m.t.Load() != before {
		t.Fatalf("a stash that gives a content-addressed name: %v, tree kept %v", err, m.t.Load() == before)
	}
	w.SetStash(r.stash)
	if err := w.WriteFile("a.txt", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ReadFile("a.txt"); string(got) != "two" {
		t.Fatalf("a.txt holds %q", got)
	}
}

// TestIdenticalRewriteKeepsNode: writing a file's own content again
// stashes nothing and keeps the tree, whether the content is in memory or
// in a tree loaded from the store; its version stays the content's.
func TestIdenticalRewriteKeepsNode(t *testing.T) {
	w, m, r := stashedStore()
	data := []byte("same\n")
	if err := w.WriteFile("d/a.txt", data); err != nil {
		t.Fatal(err)
	}
	stored := blobStore{}
	root, _, err := w.EncodeTree(nil, func(h string, b []byte) { stored[h] = b })
	if err != nil {
		t.Fatal(err)
	}
	loaded := &Workspace{st: &memStore{}, kind: "memory"}
	loaded.SetStash(r.stash)
	if _, err := loaded.DecodeTree(root, r.get(stored)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		w    *Workspace
		m    *memStore
	}{
		{"in memory", w, m},
		{"loaded", loaded, loaded.st.(*memStore)},
	} {
		calls, before := r.calls, tt.m.t.Load()
		if err := tt.w.WriteFile("d/a.txt", bytes.Clone(data)); err != nil {
			t.Fatal(err)
		}
		if r.calls != calls || tt.m.t.Load() != before {
			t.Fatalf("%s: %d stashes, tree kept %v; want none and kept", tt.name, r.calls-calls, tt.m.t.Load() == before)
		}
		if v, _, err := tt.w.Version("d/a.txt"); err != nil || v != hashVersion(data) {
			t.Fatalf("%s: version %q, %v; want %q", tt.name, v, err, hashVersion(data))
		}
	}
	if n, _ := lookup(loaded.st.(*memStore).t.Load(), "d/a.txt"); n.file.fetch == nil {
		t.Fatal("the loaded file's content was read to compare it")
	}
}

// TestStashedTreeLoadsBack: a tree of stashed files, files stored as
// before (larger than statetree.ChunkSize, mounted, written before the
// stash was set), moved and removed ones, encoded and decoded through a
// Getter over the blobs put and the contents stashed, reads back every
// file, and hashes as the tree encoded.
func TestStashedTreeLoadsBack(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), statetree.ChunkSize/16+5)
	b, err := NewMemory(map[string][]byte{"mounted/m.txt": []byte("mounted\n")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWorkspace(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("before.txt", []byte("before the stash\n")); err != nil {
		t.Fatal(err)
	}
	r := newStashRecorder()
	w.SetStash(r.stash)
	for i := range 50 {
		if err := w.WriteFile(fmt.Sprintf("dir%d/f%02d.txt", i%3, i), fmt.Appendf(nil, "file %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		p    string
		data []byte
	}{{"big.bin", big}, {"copy1/same.txt", []byte("same")}, {"copy2/same.txt", []byte("same")}, {"empty", nil}} {
		if err := w.WriteFile(f.p, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Remove("dir0/f03.txt"); err != nil {
		t.Fatal(err)
	}
	if err := w.st.move("dir1/f04.txt", "moved/f04.txt"); err != nil {
		t.Fatal(err)
	}
	if r.calls != 50+3 {
		t.Fatalf("%d stashes, want one for each of the 53 small files written", r.calls)
	}
	stored := blobStore{}
	root, _, err := w.EncodeTree(nil, func(h string, b []byte) { stored[h] = b })
	if err != nil {
		t.Fatal(err)
	}
	get := r.get(stored)
	for _, tt := range []struct {
		p       string
		located bool
	}{
		{"big.bin", false}, {"mounted/m.txt", false}, {"before.txt", false},
		{"dir2/f02.txt", true}, {"moved/f04.txt", true}, {"empty", true},
	} {
		e := entryAt(t, root, tt.p, get)
		if _, seq, _ := blobname.Split(e.Hash); (seq != 0) != tt.located {
			t.Errorf("%s: entry named %s, want located %v", tt.p, e.Hash, tt.located)
		}
	}
	if _, ok := stored[statetree.PutFile(big, nil)]; !ok {
		t.Error("the large file's chunk list was not put")
	}
	one, two := entryAt(t, root, "copy1/same.txt", get), entryAt(t, root, "copy2/same.txt", get)
	if one.Hash == two.Hash {
		t.Errorf("the same content written twice is located once: %s", one.Hash)
	}
	loaded := &Workspace{st: &memStore{}, kind: "memory"}
	if _, err := loaded.DecodeTree(root, get); err != nil {
		t.Fatal(err)
	}
	want := treeFiles(t, w.st.(*memStore).t.Load())
	if got := treeFiles(t, loaded.st.(*memStore).t.Load()); !maps.Equal(got, want) {
		t.Fatalf("loaded %d files, want %d, or other contents", len(got), len(want))
	}
	if h, err := loaded.st.(*memStore).t.Load().hash(); err != nil || h != root {
		t.Fatalf("the loaded tree hashes %s, %v; want %s", h, err, root)
	}
	for p, c := range want {
		if v, _, err := loaded.Version(p); err != nil || v != hashVersion([]byte(c)) {
			t.Fatalf("%s: version %q, %v; want the content's", p, v, err)
		}
	}
	// A located content read back that is not what its name says fails.
	for name := range r.contents {
		r.contents[name] = []byte("tampered")
	}
	again := &Workspace{st: &memStore{}, kind: "memory"}
	if _, err := again.DecodeTree(root, get); err != nil {
		t.Fatal(err)
	}
	if _, err := again.ReadFile("dir2/f02.txt"); err == nil {
		t.Fatal("a tampered located content was read")
	}
}

// TestToolsStash: write_file, edit_file and apply_edits each stash what
// they write, and a call whose stash fails is an error result that
// changes nothing, the server still serving.
func TestToolsStash(t *testing.T) {
	h := newHarness(t, backends[0], map[string]string{"a.txt": "one\n"})
	w := From(h.session(h.cs))
	r := newStashRecorder()
	w.SetStash(r.stash)
	m := w.st.(*memStore)
	located := func(p string) bool {
		n, ok := lookup(m.t.Load(), p)
		if !ok {
			t.Fatalf("no file %s", p)
		}
		_, seq, _ := blobname.Split(n.key)
		return seq != 0
	}
	if located("a.txt") {
		t.Fatal("a mounted file is located")
	}
	h.mustCall("read_file", `{"file_path":"a.txt"}`)
	for _, c := range []struct{ tool, args, path string }{
		{"write_file", `{"file_path":"w.txt","content":"written\n"}`, "w.txt"},
		{"edit_file", `{"file_path":"a.txt","old_string":"one","new_string":"two"}`, "a.txt"},
		{"apply_edits", `{"edits":[{"op":"write","file_path":"e/x.txt","content":"x\n"},{"op":"edit","file_path":"w.txt","old_string":"written","new_string":"edited"}]}`, "e/x.txt"},
	} {
		calls := r.calls
		h.mustCall(c.tool, c.args)
		if r.calls == calls || !located(c.path) {
			t.Fatalf("%s: %d stashes, %s located %v", c.tool, r.calls-calls, c.path, located(c.path))
		}
	}
	if !located("w.txt") {
		t.Fatal("w.txt as apply_edits edited it is not located")
	}
	before := h.dump(h.cs)
	r.err = errors.New("store unavailable")
	text, isErr := h.call("apply_edits", `{"edits":[{"op":"write","file_path":"f.txt","content":"f\n"},{"op":"edit","file_path":"a.txt","old_string":"two","new_string":"three"}]}`)
	if !isErr || !strings.Contains(text, "could not be stored") {
		t.Fatalf("with a failing stash: %q, error %v", text, isErr)
	}
	if after := h.dump(h.cs); after != before {
		t.Fatalf("a failed stash changed the workspace:\n%s\nwant\n%s", after, before)
	}
	r.err = nil
	h.mustCall("write_file", `{"file_path":"f.txt","content":"f\n"}`)
}
