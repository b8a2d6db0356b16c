package workspace

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// TestTrackedChanges: the changes of a memory workspace, read at the
// paths the call changed, are those of the whole trees compared from their
// roots, whatever the call did (random writes, removals and moves in a
// tree of 2,000 files); and when the tree is replaced wholesale since the
// snapshot, the whole trees are compared.
func TestTrackedChanges(t *testing.T) {
	files := map[string][]byte{}
	for i := range 2000 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%5, i)] = fmt.Appendf(nil, "%d\n", i)
	}
	b, err := NewMemory(files)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	path := func() string {
		if rng.IntN(4) == 0 {
			return fmt.Sprintf("d%d", rng.IntN(7))
		}
		return fmt.Sprintf("d%d/f%03d.txt", rng.IntN(7), rng.IntN(2100))
	}
	for round := range 200 {
		w, err := newWorkspace(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(6) {
			switch rng.IntN(3) {
			case 0:
				_ = w.WriteFile(path(), fmt.Appendf(nil, "round %d\n", round))
			case 1:
				_, _ = w.Remove(path())
			default:
				src, dst := path(), path()
				if n, err := w.Stat(src); err == nil && !n.Dir {
					_ = w.st.move(src, dst)
				}
			}
		}
		u := r.(restorer).u.(memUndo)
		if m := w.st.(*memStore); u.track == nil || m.track != u.track || u.track.tree != m.t.Load() {
			t.Fatalf("round %d: the call's changes are not tracked", round)
		}
		got, err := r.(session.Changer).Changes()
		if err != nil {
			t.Fatal(err)
		}
		var want []session.FileChange
		if err := diffNodes("", u.t, w.st.(*memStore).t.Load(), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: the changes at the paths changed:\n%v\nthe whole trees':\n%v", round, got, want)
		}
		r.Release()
	}

	// A tree replaced wholesale (as a restore of the session decodes one).
	w, err := newWorkspace(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m := w.st.(*memStore)
	next, err := with(m.t.Load(), "elsewhere.txt", fileNode([]byte("x\n")))
	if err != nil {
		t.Fatal(err)
	}
	m.t.Store(next)
	got, err := r.(session.Changer).Changes()
	if err != nil || len(got) != 1 || got[0].Path != "elsewhere.txt" {
		t.Errorf("changes after the tree was replaced: %+v, %v", got, err)
	}
}
