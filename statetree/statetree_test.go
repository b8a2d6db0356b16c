package statetree_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newRegistry returns a registry set up as the server sets one up: the
// planning and workspace sections (memory backend, starting from files)
// and the policies' memory.
func newRegistry(t testing.TB, files map[string][]byte) *session.Registry {
	t.Helper()
	b, err := workspace.NewMemory(files)
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewRegistry()
	planning.New(planning.React).Setup(r)
	workspace.New(b, workspace.Options{}).Setup(r)
	policy.Persist(r)
	return r
}

func newSession(t testing.TB, r *session.Registry) *session.Session {
	t.Helper()
	s, err := r.NewSession(fmt.Sprintf("s%p", t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// blobs is a blob store for tests that counts its reads.
type blobs struct {
	mu    sync.Mutex
	m     map[string][]byte
	reads int
}

func newBlobs() *blobs { return &blobs{m: map[string][]byte{}} }

func (b *blobs) add(m map[string][]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	maps.Copy(b.m, m)
}

func (b *blobs) get(h string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads++
	v, ok := b.m[h]
	if !ok {
		return nil, fmt.Errorf("%s: %w", h, store.ErrNotFound)
	}
	return v, nil
}

func encode(t testing.TB, s *session.Session, prev *statetree.State) (*statetree.State, map[string][]byte) {
	t.Helper()
	st, nb, err := statetree.Encode(s, prev)
	if err != nil {
		t.Fatal(err)
	}
	return st, nb
}

// dump describes everything a later call can observe of a session: its
// slices as stored and its workspace's files and directories.
func dump(t testing.TB, s *session.Session) string {
	t.Helper()
	var lines []string
	for name, v := range s.Slices() {
		b, err := s.MarshalSlice(name, v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, name+"="+string(b))
	}
	w := workspace.From(s)
	var walk func(dir string)
	walk = func(dir string) {
		infos, err := w.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Dir {
				lines = append(lines, in.Path+"/")
				walk(in.Path)
				continue
			}
			data, err := w.ReadFile(in.Path)
			if err != nil {
				t.Fatal(err)
			}
			v, _, _ := w.Version(in.Path)
			lines = append(lines, fmt.Sprintf("%s %d %s %x", in.Path, in.Size, v, statetree.Hash(data)))
		}
	}
	walk("")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// fill gives s a plan, policy memory and the files.
func fill(t testing.TB, s *session.Session, files map[string]string) {
	t.Helper()
	if len(files) == 0 {
		return
	}
	if err := s.Dispatch(planning.PlanSetup{Objective: "ship", Steps: []string{"draft", "review"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Dispatch(planning.StepUpdated{ID: 1, Status: planning.Done}); err != nil {
		t.Fatal(err)
	}
	w := workspace.From(s)
	var paths []string
	for p, c := range files {
		if err := w.WriteFile(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rbw := workspace.ReadBeforeWrite()
	if err := rbw.Remember(s, w, paths); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 3*statetree.ChunkSize/16+5) // four chunks
	tests := []struct {
		name   string
		files  map[string]string
		remove []string
	}{
		{"empty", nil, nil},
		{"one file", map[string]string{"a.txt": "hello"}, nil},
		{"nested, an empty directory and a large file", map[string]string{
			"src/main.go": "package main", "src/lib/a.go": "package lib", "src/lib/b.go": "package lib // b",
			"docs/gone.md": "x", "big.bin": big, "a-b": "sorts after a/", "a/x": "in a",
		}, []string{"docs/gone.md"}},
		{"same content twice", map[string]string{"x/1": "same", "y/1": "same"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistry(t, nil)
			s := newSession(t, r)
			fill(t, s, tt.files)
			for _, p := range tt.remove {
				if _, err := workspace.From(s).Remove(p); err != nil {
					t.Fatal(err)
				}
			}
			st, nb := encode(t, s, nil)
			bs := newBlobs()
			bs.add(nb)

			loaded := newSession(t, r)
			back, err := statetree.Decode(loaded, st.Doc, bs.get)
			if err != nil {
				t.Fatal(err)
			}
			if back.Root != st.Root {
				t.Fatalf("decoded root %s, want %s", back.Root, st.Root)
			}
			if got, want := dump(t, loaded), dump(t, s); got != want {
				t.Fatalf("loaded session:\n%s\nwant:\n%s", got, want)
			}
			if !reflect.DeepEqual(planning.Current(loaded), planning.Current(s)) {
				t.Fatalf("plan %+v, want %+v", planning.Current(loaded), planning.Current(s))
			}
			again, nb := encode(t, loaded, back)
			if again.Root != st.Root || len(nb) != 0 {
				t.Fatalf("encoding the loaded session: root %s and %d blobs, want %s and none", again.Root, len(nb), st.Root)
			}
			live, err := statetree.Live(st.Doc, bs.get)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(live, keys(bs.m)) {
				t.Fatalf("live set of %d blobs, want the %d stored", len(live), len(bs.m))
			}
		})
	}
}

func keys(m map[string][]byte) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// bigWorkspace returns the files of a workspace of dirs directories of
// perDir files of size bytes each.
func bigWorkspace(dirs, perDir, size int) map[string][]byte {
	files := map[string][]byte{}
	for d := range dirs {
		for f := range perDir {
			p := fmt.Sprintf("pkg%03d/file%03d.go", d, f)
			files[p] = bytes.Repeat([]byte{byte('a' + (d+f)%26)}, size-len(p))
			copy(files[p], p)
		}
	}
	return files
}

// TestOneFileChangeStoresItsPathOnly: writing a 1 KB file in a
// 10,000-file workspace stores the file and the parts of the two
// directories on its path that hold it (each of 100 entries, a leaf and
// the node above it), a few KB with the root document, and nothing else.
func TestOneFileChangeStoresItsPathOnly(t *testing.T) {
	r := newRegistry(t, bigWorkspace(100, 100, 1024))
	s := newSession(t, r)
	fill(t, s, map[string]string{"notes.md": "start"})
	st, all := encode(t, s, nil)
	if len(all) < 10_000 {
		t.Fatalf("first encoding stored %d blobs, want every file", len(all))
	}
	if again, nb := encode(t, s, st); len(nb) != 0 || again != st {
		t.Fatalf("encoding an unchanged session stored %d blobs, or did not give back the state it started from", len(nb))
	}

	file := bytes.Repeat([]byte("x"), 1024)
	if err := workspace.From(s).WriteFile("pkg050/file050.go", file); err != nil {
		t.Fatal(err)
	}
	next, nb := encode(t, s, st)
	size := 0
	for _, b := range nb {
		size += len(b)
	}
	t.Logf("one 1 KB write in a 10,000-file workspace: %d new blobs, %d bytes", len(nb), size)
	if len(nb) > 5 {
		t.Fatalf("%d new blobs, want at most 5 (the file, a leaf and a node of the workspace root and of pkg050/)", len(nb))
	}
	if _, ok := nb[statetree.Hash(file)]; !ok {
		t.Fatal("the file's blob is not among the new ones")
	}
	if size += len(next.Doc); size > 16<<10 {
		t.Fatalf("%d bytes of new blobs, want at most 16 KiB", size)
	}
}

// remembered is a session whose workspace is bigWorkspace(100, 100,
// size), every file of it remembered by the read-before-write policy,
// encoded (st) and its blobs stored.
type remembered struct {
	files  map[string][]byte
	r      *session.Registry
	s      *session.Session
	w      *workspace.Workspace
	st     *statetree.State
	stored *blobs
}

func newRemembered(t *testing.T, size int) *remembered {
	t.Helper()
	rw := &remembered{files: bigWorkspace(100, 100, size), stored: newBlobs()}
	rw.r = newRegistry(t, rw.files)
	rw.s = newSession(t, rw.r)
	rw.w = workspace.From(rw.s)
	if err := workspace.ReadBeforeWrite().Remember(rw.s, rw.w, slices.Collect(maps.Keys(rw.files))); err != nil {
		t.Fatal(err)
	}
	var all map[string][]byte
	rw.st, all = encode(t, rw.s, nil)
	rw.stored.add(all)
	return rw
}

// write writes 1 KB to the file p of the workspace and remembers it.
func (rw *remembered) write(t *testing.T, p string) {
	t.Helper()
	if err := rw.w.WriteFile(p, bytes.Repeat([]byte("x"), 1024)); err != nil {
		t.Fatal(err)
	}
	if err := workspace.ReadBeforeWrite().Remember(rw.s, rw.w, []string{p}); err != nil {
		t.Fatal(err)
	}
}

// TestLargeSliceStoresItsChangeOnly: with the read-before-write memory of
// all 10,000 files of a workspace (about 500 KB, stored as a merkle.Map),
// writing one 1 KB file and remembering it stores a few KB: the file, the
// parts of the directories on its path, a leaf of the memory and the
// nodes above it, the root.
// The session decodes from the live blobs alone, unchanged.
func TestLargeSliceStoresItsChangeOnly(t *testing.T) {
	rw := newRemembered(t, 1024)
	s, st, stored := rw.s, rw.st, rw.stored
	rw.write(t, "pkg050/new.go")
	next, nb := encode(t, s, st)
	size := len(next.Doc)
	for _, b := range nb {
		size += len(b)
	}
	t.Logf("one 1 KB write and its memory, 10,000 files remembered: %d new blobs, %d bytes with the root document", len(nb), size)
	if size > 16_000 {
		t.Fatalf("%d bytes of new blobs, want at most 16 KB", size)
	}
	stored.add(nb)

	live, err := statetree.Live(next.Doc, stored.get)
	if err != nil {
		t.Fatal(err)
	}
	onlyLive := func(h string) ([]byte, error) {
		if !live[h] {
			return nil, fmt.Errorf("%s is not live: %w", h, store.ErrNotFound)
		}
		return stored.get(h)
	}
	fresh := newSession(t, rw.r)
	if _, err := statetree.Decode(fresh, next.Doc, onlyLive); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, fresh), dump(t, s); got != want {
		t.Fatal("the decoded session differs from the encoded one")
	}
}

// countingKey is a slice whose codec counts how often it marshals.
var countingKey = session.NewKey[*string]("test.counted")

func TestUnchangedSliceIsNotMarshalledAgain(t *testing.T) {
	r := newRegistry(t, nil)
	marshals := 0
	session.Persist(r, countingKey, session.Codec[*string]{
		Marshal: func(v *string) ([]byte, error) { marshals++; return []byte(*v), nil },
		Unmarshal: func(b []byte) (*string, error) {
			v := string(b)
			return &v, nil
		},
	})
	s := newSession(t, r)
	v := "one"
	session.Set(s, countingKey, &v)
	st, _ := encode(t, s, nil)
	st, nb := encode(t, s, st)
	if marshals != 1 || len(nb) != 0 {
		t.Fatalf("%d marshals and %d blobs after two encodings of one value, want 1 and 0", marshals, len(nb))
	}
	w := "two"
	session.Set(s, countingKey, &w)
	next, nb := encode(t, s, st)
	if marshals != 2 || len(nb) != 0 || next.Root == st.Root {
		t.Fatalf("%d marshals, %d blobs and the root %s after a change, want 2, none (the slice is in the document) and a new root", marshals, len(nb), next.Root)
	}
}

// TestSmallSlicesTravelInTheDocument: a change of a plan, or of any slice
// of up to InlineMax bytes, is a new root document and no blob; a larger
// value is a blob, and one larger than MaxSliceBlob a tree of chunks.
func TestSmallSlicesTravelInTheDocument(t *testing.T) {
	r := newRegistry(t, nil)
	session.Persist(r, countingKey, session.Codec[*string]{
		Marshal: func(v *string) ([]byte, error) { return []byte(*v), nil },
		Unmarshal: func(b []byte) (*string, error) {
			v := string(b)
			return &v, nil
		},
	})
	s := newSession(t, r)
	st, nb := encode(t, s, nil)
	bs := newBlobs()
	bs.add(nb) // the empty workspace's
	if err := s.Dispatch(planning.PlanSetup{Objective: "ship", Steps: []string{"draft", "review"}}); err != nil {
		t.Fatal(err)
	}
	st, nb = encode(t, s, st)
	if len(nb) != 0 {
		t.Fatalf("a new plan stored %d blobs, want none", len(nb))
	}
	for _, tt := range []struct {
		size, blobs int
	}{
		{statetree.InlineMax, 0},
		{statetree.InlineMax + 1, 1},
		{statetree.MaxSliceBlob + 1, 3}, // two chunks and their list
		{10, 0},
	} {
		v := strings.Repeat("v", tt.size-1) + fmt.Sprint(tt.blobs)
		session.Set(s, countingKey, &v)
		st, nb = encode(t, s, st)
		if len(nb) != tt.blobs {
			t.Errorf("a slice of %d bytes stored %d blobs, want %d", tt.size, len(nb), tt.blobs)
		}
		bs.add(nb)
		loaded := newSession(t, r)
		if _, err := statetree.Decode(loaded, st.Doc, bs.get); err != nil {
			t.Fatalf("a slice of %d bytes: %v", tt.size, err)
		}
		if got, _ := session.Get(loaded, countingKey); *got != v {
			t.Errorf("a slice of %d bytes decoded to %d bytes", tt.size, len(*got))
		}
	}
}

func TestUndeclaredSliceFailsEncoding(t *testing.T) {
	r := newRegistry(t, nil)
	s := newSession(t, r)
	v := "x"
	session.Set(s, countingKey, &v)
	if _, _, err := statetree.Encode(s, nil); err == nil || !strings.Contains(err.Error(), "test.counted") {
		t.Fatalf("err %v, want one naming the slice", err)
	}
}

// TestDecodeReadsOnFirstUse: loading a session reads its root document and
// the workspace's root directory; another directory is read when a call
// first goes through it, and a file's content when it is first read, once.
func TestDecodeReadsOnFirstUse(t *testing.T) {
	r := newRegistry(t, nil)
	s := newSession(t, r)
	fill(t, s, map[string]string{"a/1": "one", "a/2": "two", "b/3": "three"})
	st, nb := encode(t, s, nil)
	bs := newBlobs()
	bs.add(nb)
	loaded := newSession(t, r)
	if _, err := statetree.Decode(loaded, st.Doc, bs.get); err != nil {
		t.Fatal(err)
	}
	// the workspace root (the slices are in the document)
	if want := 1; bs.reads != want {
		t.Fatalf("decoding read %d blobs, want %d", bs.reads, want)
	}
	w := workspace.From(loaded)
	if _, _, err := w.Version("a/1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if data, err := w.ReadFile("a/2"); err != nil || string(data) != "two" {
			t.Fatalf("read %q, %v", data, err)
		}
	}
	if bs.reads != 3 {
		t.Fatalf("%d reads after reading one file twice and a version, want 3 (a/, a/2)", bs.reads)
	}
}

func TestBadStoreFailsDecoding(t *testing.T) {
	r := newRegistry(t, nil)
	s := newSession(t, r)
	fill(t, s, map[string]string{"a/1": "one"})
	st, nb := encode(t, s, nil)
	dir := ""
	for h, b := range nb {
		if bytes.HasPrefix(b, []byte("wdir1")) {
			dir = h
		}
	}
	tests := []struct {
		name string
		doc  []byte
		get  statetree.Getter
	}{
		{"corrupt document", st.Doc[:len(st.Doc)-3], func(h string) ([]byte, error) { return nb[h], nil }},
		{"not a document", []byte("wdir1"), func(h string) ([]byte, error) { return nb[h], nil }},
		{"corrupt blob", st.Doc, func(h string) ([]byte, error) {
			if h == dir {
				return []byte("wdir1"), nil
			}
			return nb[h], nil
		}},
		{"missing blob", st.Doc, func(h string) ([]byte, error) { return nil, store.ErrNotFound }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A directory is read on first use: then its error is the
			// error of the use.
			loaded := newSession(t, r)
			if _, err := statetree.Decode(loaded, tt.doc, tt.get); err == nil {
				if data, err := workspace.From(loaded).ReadFile("a/1"); err == nil {
					t.Fatalf("decoded, and a/1 reads %q", data)
				}
			}
			if _, err := statetree.Live(tt.doc, tt.get); err == nil {
				t.Fatal("live set computed")
			}
		})
	}
	if _, err := statetree.DecodeRoot(newSession(t, r), st.Root, func(string) ([]byte, error) { return nil, store.ErrNotFound }); err == nil {
		t.Fatal("decoded a root document not stored")
	}
}

// TestThroughTheStore commits a session's state to store.NewMemory, loads
// it in a fresh registry, changes it, commits the change with only the new
// blobs, and sweeps what the head no longer uses.
func TestThroughTheStore(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory(store.Options{})
	defer st.Close()
	s := newSession(t, newRegistry(t, nil))
	fill(t, s, map[string]string{"a/1": "one", "b/2": "two"})
	state, nb := encode(t, s, nil)
	rev, err := st.Create(ctx, "sess", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = st.Commit(ctx, "sess", rev, state.Doc, nb); err != nil {
		t.Fatal(err)
	}

	get := func(h string) ([]byte, error) { return st.Blob(ctx, "sess", h) }
	head, err := st.Load(ctx, "sess")
	if err != nil {
		t.Fatal(err)
	}
	loaded := newSession(t, newRegistry(t, nil))
	prev, err := statetree.Decode(loaded, head.Data, get)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, loaded), dump(t, s); got != want {
		t.Fatalf("loaded:\n%s\nwant:\n%s", got, want)
	}

	if err := workspace.From(loaded).WriteFile("a/1", []byte("changed")); err != nil {
		t.Fatal(err)
	}
	next, nb := encode(t, loaded, prev)
	if rev, err = st.Commit(ctx, "sess", head.Rev, next.Doc, nb); err != nil {
		t.Fatal(err)
	}
	live, err := statetree.Live(next.Doc, get)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := st.Sweep(ctx, "sess", rev, func(h string) bool { return live[h] })
	if err != nil {
		t.Fatal(err)
	}
	if n := sw.Removed; n != 3 { // the old workspace root and a/, and "one"
		t.Fatalf("swept %d blobs, want 3", n)
	}
	again := newSession(t, newRegistry(t, nil))
	if _, err := statetree.Decode(again, next.Doc, get); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, again), dump(t, loaded); got != want {
		t.Fatalf("after the change and a sweep:\n%s\nwant:\n%s", got, want)
	}
}

func BenchmarkEncodeAfterOneFileChange(b *testing.B) {
	r := newRegistry(b, bigWorkspace(100, 100, 1024))
	s := newSession(b, r)
	w := workspace.From(s)
	st, _ := encode(b, s, nil)
	file := bytes.Repeat([]byte("x"), 1024)
	b.ReportAllocs()
	bytesOut := 0
	for i := 0; b.Loop(); i++ {
		file[0] = byte(i)
		// The workspace keeps what it is given: each write gets its own.
		if err := w.WriteFile(fmt.Sprintf("pkg%03d/file%03d.go", i%100, i%100), bytes.Clone(file)); err != nil {
			b.Fatal(err)
		}
		var nb map[string][]byte
		st, nb = encode(b, s, st)
		for _, v := range nb {
			bytesOut += len(v)
		}
	}
	b.ReportMetric(float64(bytesOut)/float64(b.N), "stored-B/op")
}

// TestRolledBackCallStoresNothing: a call whose transaction is rolled back
// leaves the session as it was encoded, so nothing is stored.
func TestRolledBackCallStoresNothing(t *testing.T) {
	s := newSession(t, newRegistry(t, nil))
	fill(t, s, map[string]string{"a/1": "one"})
	st, _ := encode(t, s, nil)
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := workspace.From(s).WriteFile("a/2", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := s.Dispatch(planning.StepsAdded{Steps: []string{"more"}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if next, nb := encode(t, s, st); next.Root != st.Root || len(nb) != 0 {
		t.Fatalf("root %s and %d blobs after a rollback, want %s and none", next.Root, len(nb), st.Root)
	}
}

// TestOldPolicyMemoryContinued: a read-before-write memory of 5,000 files
// stored by the former build (format 2: one JSON object, in chunks) loads,
// and the first change stores it as a merkle.Map, which loads back whole.
func TestOldPolicyMemoryContinued(t *testing.T) {
	want := map[string]string{}
	for i := range 5000 {
		want[fmt.Sprintf("src/f%05d.go", i)] = fmt.Sprintf("%032x", i)
	}
	// The former codec of the slice: encoding/json of the whole map.
	old := session.NewRegistry()
	session.Persist(old, session.NewKey[map[string]string]("policy.read_before_write"), session.JSON[map[string]string]())
	former, err := old.NewSession("old")
	if err != nil {
		t.Fatal(err)
	}
	session.Set(former, session.NewKey[map[string]string]("policy.read_before_write"), want)
	st, all := encode(t, former, nil)
	if !bytes.Contains(st.Doc, []byte("c\x18policy.read_before_write")) {
		t.Fatalf("the former codec's memory is not stored in chunks: %q", st.Doc)
	}
	stored := newBlobs()
	stored.add(all)

	r := newRegistry(t, nil)
	s := newSession(t, r)
	prev, err := statetree.Decode(s, st.Doc, stored.get)
	if err != nil {
		t.Fatal(err)
	}
	w := workspace.From(s)
	if err := w.WriteFile("new.go", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := workspace.ReadBeforeWrite().Remember(s, w, []string{"new.go"}); err != nil {
		t.Fatal(err)
	}
	v, _, _ := w.Version("new.go")
	want["new.go"] = v
	next, nb := encode(t, s, prev)
	if !bytes.Contains(next.Doc, []byte("m\x18policy.read_before_write")) {
		t.Fatalf("the changed memory is not stored as a map: %q", next.Doc)
	}
	stored.add(nb)
	fresh := newSession(t, r)
	if _, err := statetree.Decode(fresh, next.Doc, stored.get); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	b, err := fresh.MarshalSlice("policy.read_before_write", fresh.Slices()["policy.read_before_write"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the memory loads with %d files, want %d", len(got), len(want))
	}
}
