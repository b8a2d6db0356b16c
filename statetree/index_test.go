package statetree_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/statetree"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// withDoc returns a Getter that serves the root document doc under its
// hash, as a head holds it, and the rest from get.
func withDoc(doc []byte, get statetree.Getter) statetree.Getter {
	root := statetree.Hash(doc)
	return func(h string) ([]byte, error) {
		if h == root {
			return doc, nil
		}
		return get(h)
	}
}

// liveOf returns what statetree.Live finds a state uses, and its root
// document.
func liveOf(t *testing.T, st *statetree.State, get statetree.Getter) map[string]bool {
	t.Helper()
	live, err := statetree.Live(st.Doc, get)
	if err != nil {
		t.Fatal(err)
	}
	live[st.Root] = true
	return live
}

// TestIndexFollowsLive: through random changes of a workspace (files
// written, rewritten, removed, the same content at several paths, empty
// directories, a directory of more than merkle.SmallMax entries, files
// of several chunks, the policies' memory), an Index whose roots are the
// last two states holds what Live finds they use, and Update names dead
// exactly the blobs that only the state it let go of used.
// With a stash, the small files written are located, the same content
// at two paths located twice.
func TestIndexFollowsLive(t *testing.T) {
	for _, located := range []bool{false, true} {
		t.Run(fmt.Sprintf("located=%v", located), func(t *testing.T) { indexFollowsLive(t, 1, 2, 300, located) })
	}
}

// FuzzIndexFollowsLive is TestIndexFollowsLive from other seeds.
func FuzzIndexFollowsLive(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(20), false)
	f.Add(uint64(1), uint64(2), uint8(20), true)
	f.Fuzz(func(t *testing.T, a, b uint64, steps uint8, located bool) {
		indexFollowsLive(t, a, b, int(steps), located)
	})
}

// stashInto returns a stash that keeps each content in bs at the next
// sequence, as a session's store does.
func stashInto(bs *blobs) statetree.Stash {
	var seq uint64
	return func(content []byte) (string, error) {
		seq++
		name := blobname.Located(blobname.Hash(content), seq)
		bs.add(map[string][]byte{name: content})
		return name, nil
	}
}

func indexFollowsLive(t *testing.T, seed1, seed2 uint64, steps int, located bool) {
	r := newRegistry(t, nil)
	s := newSession(t, r)
	w := workspace.From(s)
	bs := newBlobs()
	if located {
		w.SetStash(stashInto(bs))
	}
	rbw := workspace.ReadBeforeWrite()
	rng := rand.New(rand.NewPCG(seed1, seed2))
	big := strings.Repeat("0123456789abcdef", 2*statetree.ChunkSize/16+3)
	contents := []string{"", "same", "other", big, big + "x"}
	path := func() string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf("flat/f%03d", rng.IntN(150))
		case 1:
			return fmt.Sprintf("d%d/e%d/f%d", rng.IntN(3), rng.IntN(3), rng.IntN(3))
		case 2:
			return fmt.Sprintf("copy%d/f%d", rng.IntN(2), rng.IntN(2))
		default:
			return fmt.Sprintf("top%d", rng.IntN(5))
		}
	}
	x := statetree.NewIndex()
	var prev, older *statetree.State
	for step := range steps {
		for range 1 + rng.IntN(5) {
			p := path()
			switch rng.IntN(4) {
			case 0:
				_, _ = w.Remove(strings.SplitN(p, "/", 2)[0])
			case 1:
				_ = w.PutDir(p, true)
			default:
				if err := w.WriteFile(p, []byte(contents[rng.IntN(len(contents))])); err == nil {
					if err := rbw.Remember(s, w, []string{p}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		st, nb := encode(t, s, prev)
		bs.add(nb)
		bs.add(map[string][]byte{st.Root: st.Doc})
		get := bs.get
		roots := []statetree.Root{statetree.DocRoot(st.Root)}
		want := liveOf(t, st, get)
		if prev != nil {
			roots = append(roots, statetree.DocRoot(prev.Root))
			maps.Copy(want, liveOf(t, prev, get))
		}
		dead, err := x.Update(roots, get)
		if err != nil {
			t.Fatal(err)
		}
		for h := range want {
			if !x.Has(h) {
				t.Fatalf("step %d: %s is used and not in the index", step, h)
			}
		}
		for h := range bs.m {
			if !want[h] && x.Has(h) {
				t.Fatalf("step %d: %s is in the index, and not used", step, h)
			}
		}
		var wantDead []string
		if older != nil {
			for h := range liveOf(t, older, get) {
				if !want[h] {
					wantDead = append(wantDead, h)
				}
			}
		}
		slices.Sort(dead)
		slices.Sort(wantDead)
		if !slices.Equal(dead, wantDead) {
			t.Fatalf("step %d: %d dead, want %d", step, len(dead), len(wantDead))
		}
		older, prev = prev, st
	}
}

// TestIndexReadsWhatChanged: an Index of a 10,000-file workspace in
// directories of 100, with the policies' memory of every file, reads
// after one 1 KB write the blobs the write stored that name others (the
// root document, the parts of the directories on its path, the memory's
// nodes), not the workspace, and lets go of as many; so does one whose
// write is located (stashed, not stored with the state).
func TestIndexReadsWhatChanged(t *testing.T) {
	for _, located := range []bool{false, true} {
		t.Run(fmt.Sprintf("located=%v", located), func(t *testing.T) { indexReadsWhatChanged(t, located) })
	}
}

func indexReadsWhatChanged(t *testing.T, located bool) {
	rw := newRemembered(t, 100)
	s, st, bs := rw.s, rw.st, rw.stored
	if located {
		rw.w.SetStash(stashInto(bs))
	}
	x := statetree.NewIndex()
	if _, err := x.Update([]statetree.Root{statetree.DocRoot(st.Root)}, withDoc(st.Doc, bs.get)); err != nil {
		t.Fatal(err)
	}
	if x.Len() < len(rw.files) {
		t.Fatalf("index of %d blobs, want at least the %d files", x.Len(), len(rw.files))
	}
	for i := range 10 {
		rw.write(t, fmt.Sprintf("pkg050/new%d.go", i))
		next, nb := encode(t, s, st)
		bs.add(nb)
		reads := x.Reads()
		dead, err := x.Update([]statetree.Root{statetree.DocRoot(next.Root)}, withDoc(next.Doc, bs.get))
		if err != nil {
			t.Fatal(err)
		}
		read := x.Reads() - reads
		t.Logf("write %d: %d new blobs, %d read, %d dead", i, len(nb), read, len(dead))
		if read > len(nb)+1 || len(dead) > len(nb)+1 {
			t.Fatalf("%d blobs read and %d dead after a write that stored %d, want at most %d", read, len(dead), len(nb), len(nb)+1)
		}
		st = next
	}
}

// TestIndexRefusesWhatIsNotItsFormat: a root that is not a hash, or a
// blob that is not what it is named as, fails Update.
func TestIndexRefusesWhatIsNotItsFormat(t *testing.T) {
	bs := newBlobs()
	junk := []byte("not a document")
	bs.add(map[string][]byte{statetree.Hash(junk): junk})
	for _, tt := range []struct {
		name string
		root statetree.Root
	}{
		{"not a hash", statetree.DocRoot("x")},
		{"not stored", statetree.DocRoot(statetree.Hash([]byte("absent")))},
		{"not a document", statetree.DocRoot(statetree.Hash(junk))},
		{"not a chunk list", statetree.FileRoot(statetree.Hash(junk), 3*statetree.ChunkSize)},
		{"a located document", statetree.DocRoot(blobname.Located(statetree.Hash(junk), 1))},
		{"a located chunk list", statetree.FileRoot(blobname.Located(statetree.Hash(junk), 1), 3*statetree.ChunkSize)},
		{"located past 2^56", statetree.FileRoot(blobname.Located(statetree.Hash(junk), 1<<56), 10)},
	} {
		if _, err := statetree.NewIndex().Update([]statetree.Root{tt.root}, bs.get); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	name := blobname.Located(statetree.Hash(junk), 1<<56-1)
	x := statetree.NewIndex()
	if _, err := x.Update([]statetree.Root{statetree.FileRoot(name, 10)}, bs.get); err != nil || !x.Has(name) || x.Has(statetree.Hash(junk)) {
		t.Fatalf("a located file as a root: %v, has it %v, has its hash %v", err, x.Has(name), x.Has(statetree.Hash(junk)))
	}
	if dead, err := x.Update(nil, bs.get); err != nil || !slices.Equal(dead, []string{name}) {
		t.Fatalf("its root let go: dead %v, %v; want %s", dead, err, name)
	}
}

// TestIndexLocatedFiles: in a directory of 10,000 located files, a file
// replaced and one removed let go of their located blobs, and the same
// content located twice, or held by a mounted file as a
// content-addressed blob, is a blob of each name: it goes with the last
// file that names it, and Update says dead what Live finds no longer
// used.
func TestIndexLocatedFiles(t *testing.T) {
	shared := []byte("shared\n")
	r := newRegistry(t, map[string][]byte{"mounted.txt": shared})
	s := newSession(t, r)
	w := workspace.From(s)
	bs := newBlobs()
	var last string // the name of the content stashed last
	stash := stashInto(bs)
	w.SetStash(func(content []byte) (string, error) {
		name, err := stash(content)
		last = name
		return name, err
	})
	nameOf := map[string]string{} // the located name of each path written
	write := func(p string, data []byte) {
		t.Helper()
		before := len(bs.m)
		if err := w.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
		if len(bs.m) != before+1 {
			t.Fatalf("%s: %d contents stashed, want 1", p, len(bs.m)-before)
		}
		nameOf[p] = last
	}
	for i := range 10000 {
		write(fmt.Sprintf("big/f%05d.txt", i), fmt.Appendf(nil, "file %d\n", i))
	}
	write("copy1/same.txt", shared)
	write("copy2/same.txt", shared)
	x := statetree.NewIndex()
	var prev *statetree.State
	step := func(what string, wantDead, wantKept []string) {
		t.Helper()
		st, nb := encode(t, s, prev)
		bs.add(nb)
		dead, err := x.Update([]statetree.Root{statetree.DocRoot(st.Root)}, withDoc(st.Doc, bs.get))
		if err != nil {
			t.Fatal(err)
		}
		live := liveOf(t, st, bs.get)
		if prev != nil {
			var want []string
			for h := range liveOf(t, prev, bs.get) {
				if !live[h] {
					want = append(want, h)
				}
			}
			slices.Sort(dead)
			slices.Sort(want)
			if !slices.Equal(dead, want) {
				t.Fatalf("%s: dead %v, want %v", what, dead, want)
			}
		}
		for h := range live {
			if !x.Has(h) {
				t.Fatalf("%s: %s is used and not in the index", what, h)
			}
		}
		for _, h := range wantDead {
			if !slices.Contains(dead, h) || x.Has(h) {
				t.Fatalf("%s: %s is not dead", what, h)
			}
		}
		for _, h := range wantKept {
			if slices.Contains(dead, h) || !x.Has(h) {
				t.Fatalf("%s: %s is not kept", what, h)
			}
		}
		prev = st
	}
	one, two, hash := nameOf["copy1/same.txt"], nameOf["copy2/same.txt"], blobname.Hash(shared)
	if one == two || !strings.HasPrefix(one, hash) || !strings.HasPrefix(two, hash) {
		t.Fatalf("the same content written twice is named %s and %s", one, two)
	}
	step("10,000 files", nil, append([]string{one, two, hash}, slices.Collect(maps.Values(nameOf))...))
	replaced := nameOf["big/f05000.txt"]
	write("big/f05000.txt", []byte("replaced\n"))
	step("a file replaced", []string{replaced}, []string{nameOf["big/f05000.txt"], nameOf["big/f05001.txt"]})
	removed := nameOf["big/f00007.txt"]
	if _, err := w.Remove("big/f00007.txt"); err != nil {
		t.Fatal(err)
	}
	step("a file removed", []string{removed}, []string{nameOf["big/f00008.txt"]})
	if _, err := w.Remove("copy1"); err != nil {
		t.Fatal(err)
	}
	step("a copy removed", []string{one}, []string{two, hash})
	if _, err := w.Remove("mounted.txt"); err != nil {
		t.Fatal(err)
	}
	step("the mounted file removed", []string{hash}, []string{two})
	if _, err := w.Remove("copy2"); err != nil {
		t.Fatal(err)
	}
	step("the last copy removed", []string{two}, nil)
}
