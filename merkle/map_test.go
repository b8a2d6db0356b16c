package merkle

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// blobs is a store of blobs for the tests.
type blobs map[string][]byte

func (s blobs) put(h string, b []byte) { s[h] = b }

func (s blobs) get(h string) ([]byte, error) {
	b, ok := s[h]
	if !ok {
		return nil, fmt.Errorf("no blob %s", h)
	}
	return b, nil
}

// full returns the map of want built at once, as a full re-encoding
// would.
func full(want map[string]string) Map[string] {
	keys := slices.Sorted(maps.Keys(want))
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = want[k]
	}
	return FromSorted(keys, vals)
}

// check fails t unless m holds want, and hashes as the map built at once.
func check(t testing.TB, m Map[string], want map[string]string) {
	t.Helper()
	if m.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(want))
	}
	got := map[string]string{}
	last := ""
	for k, v := range m.All() {
		if k <= last && len(got) > 0 {
			t.Fatalf("All: %q after %q", k, last)
		}
		got[k], last = v, k
	}
	if !maps.Equal(got, want) {
		t.Fatalf("All yields %d entries, not those set", len(got))
	}
	for k, v := range want {
		if g, ok := m.Get(k); !ok || g != v {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, g, ok, v)
		}
	}
	if _, ok := m.Get("\xff-none"); ok {
		t.Fatal("Get of a missing key found it")
	}
	h, err := m.Hash(Strings)
	if err != nil {
		t.Fatal(err)
	}
	if hf, _ := full(want).Hash(Strings); h != hf {
		t.Fatalf("the map's hash %s differs from its full re-encoding's %s", h, hf)
	}
}

func name(i int) string { return fmt.Sprintf("src/pkg%d/file%05d.go", i%7, i) }

// TestMap inserts, changes, deletes and renames the entries of a map of
// 10,000, checking it against a Go map and its hash against the map built
// at once, then stores and loads it.
func TestMap(t *testing.T) {
	const n = 10000
	var m Map[string]
	want := map[string]string{}
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		m = m.Set(name(i), fmt.Sprint(i))
		want[name(i)] = fmt.Sprint(i)
	}
	check(t, m, want)
	if m.root.height < 2 {
		t.Errorf("a map of %d entries has a tree of height %d, want at least 2", n, m.root.height)
	}
	for i := 0; i < n; i += 3 {
		m = m.Set(name(i), "changed")
		want[name(i)] = "changed"
	}
	check(t, m, want)
	for i := 1; i < n; i += 3 { // rename: delete and set under another key
		v := want[name(i)]
		m = m.Delete(name(i)).Set("renamed/"+name(i), v)
		delete(want, name(i))
		want["renamed/"+name(i)] = v
	}
	check(t, m, want)
	if m2 := m.Delete("nothing"); m2 != m {
		t.Error("deleting a missing key made another map")
	}
	store := blobs{}
	h, err := m.Store(nil, Strings, store.put)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadMap(h, store.get, Strings)
	if err != nil {
		t.Fatal(err)
	}
	check(t, loaded, want)
	for k := range want {
		m = m.Delete(k)
	}
	check(t, m, map[string]string{})
}

// TestMapStoreWritesWhatChanged: storing a map of 100,000 entries after
// one change encodes and puts the nodes on one path (a few), however
// large the map, and only blobs the load of the result needs.
func TestMapStoreWritesWhatChanged(t *testing.T) {
	const n = 100000
	keys := make([]string, n)
	vals := make([]string, n)
	for i := range n {
		keys[i], vals[i] = fmt.Sprintf("f%06d.txt", i), "v"
	}
	m := FromSorted(keys, vals)
	store := blobs{}
	if _, err := m.Store(nil, Strings, store.put); err != nil {
		t.Fatal(err)
	}
	encoded := 0
	counting := &Codec[string]{
		Leaf: func(k, v []string) ([]byte, error) {
			encoded++
			return Strings.Leaf(k, v)
		},
		DecodeLeaf: Strings.DecodeLeaf,
	}
	for _, op := range []struct {
		name string
		next Map[string]
	}{
		{"insert", m.Set("f050000.txt-new", "v")},
		{"change", m.Set("f050000.txt", "w")},
		{"delete", m.Delete("f050000.txt")},
	} {
		encoded = 0
		put := blobs{}
		h, err := op.next.Store(&m, counting, put.put)
		if err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, b := range put {
			bytes += len(b)
		}
		if len(put) > 6 || encoded > 3 || bytes > 16<<10 {
			t.Errorf("%s: stored %d blobs of %d bytes, encoding %d leaves; want at most 6 blobs, 16 KiB and 3 leaves", op.name, len(put), bytes, encoded)
		}
		maps.Copy(put, store)
		if _, err := LoadMap(h, put.get, Strings); err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
	}
}

// TestMapSmall: a map of up to SmallMax entries is one blob, the one an
// older build's format gave (a leaf of all entries), and loads as such.
func TestMapSmall(t *testing.T) {
	keys, vals := []string{}, []string{}
	for i := range SmallMax {
		keys, vals = append(keys, fmt.Sprintf("k%04d", i)), append(vals, "v")
	}
	m := FromSorted(keys, vals)
	store := blobs{}
	h, err := m.Store(nil, Strings, store.put)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := Strings.Leaf(keys, vals)
	if len(store) != 1 || h != Hash(leaf) {
		t.Fatalf("a map of %d entries stored %d blobs, hash %s; want one, %s", SmallMax, len(store), h, Hash(leaf))
	}
	empty, _ := Strings.Leaf(nil, nil)
	if h, _ := (Map[string]{}).Hash(Strings); h != Hash(empty) {
		t.Errorf("the empty map's hash is %s, want the empty leaf's", h)
	}
}

// TestMapLegacy: a map stored by an older build as one blob of more
// entries than SmallMax loads under that hash, stores nothing while
// unchanged, and stores its whole tree at its first change.
func TestMapLegacy(t *testing.T) {
	want := map[string]string{}
	keys, vals := []string{}, []string{}
	for i := range 3000 {
		k := fmt.Sprintf("old%05d", i)
		keys, vals, want[k] = append(keys, k), append(vals, "v"), "v"
	}
	leaf, _ := Strings.Leaf(keys, vals)
	store := blobs{Hash(leaf): leaf}
	m, err := LoadMap(Hash(leaf), store.get, Strings)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := m.Hash(Strings); h != Hash(leaf) {
		t.Fatalf("the old map hashes %s, want its blob's %s", h, Hash(leaf))
	}
	put := blobs{}
	if _, err := m.Store(&m, Strings, put.put); err != nil || len(put) != 0 {
		t.Fatalf("storing the unchanged old map put %d blobs, %v", len(put), err)
	}
	m2 := m.Set("new", "v")
	want["new"] = "v"
	h, err := m2.Store(&m, Strings, put.put)
	if err != nil {
		t.Fatal(err)
	}
	m3, err := LoadMap(h, put.get, Strings) // the new blobs alone
	if err != nil {
		t.Fatal(err)
	}
	check(t, m3, want)
}

// loadAll loads the map stored under h and reads all of it.
func loadAll(h string, get func(string) ([]byte, error)) (err error) {
	defer Recover(&err)
	m, err := LoadMap(h, get, Strings)
	if err != nil {
		return err
	}
	for range m.All() {
	}
	return nil
}

// TestLoadMapBad: blobs that are not what their place says fail the load.
func TestLoadMapBad(t *testing.T) {
	good := blobs{}
	keys, vals := []string{}, []string{}
	for i := range 1000 {
		keys, vals = append(keys, fmt.Sprintf("k%04d", i)), append(vals, "v")
	}
	h, _ := FromSorted(keys, vals).Store(nil, Strings, good.put)
	root := good[h]
	for name, b := range map[string][]byte{
		"not a blob of a map":  []byte("nonsense"),
		"a node without kids":  []byte("wmap1\x01"),
		"a node of height 0":   []byte("wmap1\x00"),
		"a truncated node":     root[:len(root)-3],
		"a leaf out of order":  []byte("wstr1\x01b\x00\x01a\x00"),
		"a truncated leaf":     []byte("wstr1\x05ab"),
		"a node naming a leaf": append([]byte("wmap1\x02\x01z\x01"), make([]byte, 32)...),
	} {
		s := blobs{Hash(b): b}
		maps.Copy(s, good)
		delete(s, h)
		if err := loadAll(Hash(b), s.get); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

// FuzzMap applies random sets and deletes to a map, stores it and reads it
// back now and then, going on from the map read back, and checks it, and
// its hash against the map built at once.
func FuzzMap(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 4, 5})
	f.Add(make([]byte, 600))
	f.Add([]byte("0\xcc")) // an empty map stored
	f.Fuzz(func(t *testing.T, ops []byte) {
		var m Map[string]
		want := map[string]string{}
		var stored *Map[string]
		store := blobs{}
		for i := 0; i+1 < len(ops); i += 2 {
			k := fmt.Sprintf("k%03d", int(ops[i])*int(ops[i+1]%8))
			if ops[i+1]&0x80 != 0 {
				m = m.Delete(k)
				delete(want, k)
			} else {
				v := fmt.Sprint(i)
				m = m.Set(k, v)
				want[k] = v
			}
			if i%64 == 0 {
				h, err := m.Store(stored, Strings, store.put)
				if err != nil {
					t.Fatal(err)
				}
				loaded, err := LoadMap(h, store.get, Strings)
				if err != nil {
					t.Fatal(err)
				}
				if i%128 == 0 {
					check(t, loaded, want) // which reads it all
				}
				// Go on from the map read back, whose nodes are
				// read as the changes reach them.
				m = loaded
				last := m
				stored = &last
			}
		}
		check(t, m, want)
	})
}

// TestLoadMapIsLazy: loading a map of 100,000 entries, reading one, and
// storing a change to it read the nodes on one path, not the map; a part
// that cannot be read fails the use that needs it with a *LoadError.
func TestLoadMapIsLazy(t *testing.T) {
	const n = 100000
	keys, vals := make([]string, n), make([]string, n)
	for i := range n {
		keys[i], vals[i] = fmt.Sprintf("f%06d", i), "v"
	}
	store := blobs{}
	h, err := FromSorted(keys, vals).Store(nil, Strings, store.put)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	counted := func(h string) ([]byte, error) { reads++; return store.get(h) }
	m, err := LoadMap(h, counted, Strings)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Get("f054321"); !ok || v != "v" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	m2 := m.Set("f054321", "w")
	if _, err := m2.Store(&m, Strings, func(string, []byte) {}); err != nil {
		t.Fatal(err)
	}
	if m.Len() != n || reads > 6 {
		t.Errorf("Len %d; %d blobs read, want at most 6", m.Len(), reads)
	}

	missing := blobs{h: store[h]}
	m, err = LoadMap(h, missing.get, Strings)
	if err != nil {
		t.Fatal(err)
	}
	err = func() (err error) {
		defer Recover(&err)
		m.Get("f000001")
		return nil
	}()
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("a Get needing a missing blob: %v, want a *LoadError", err)
	}
}

// TestLoadedMapShrinks: a map read lazily from the store, emptied down to
// a few entries, hashes as the same entries built at once: a root left
// with one kid not read yet is read, and the tree collapses to its
// canonical height.
func TestLoadedMapShrinks(t *testing.T) {
	want := map[string]string{}
	var m Map[string]
	for i := range 5000 {
		k := fmt.Sprintf("k%05d", i)
		m, want[k] = m.Set(k, "v"), "v"
	}
	store := blobs{}
	h, err := m.Store(nil, Strings, store.put)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = LoadMap(h, store.get, Strings); err != nil {
		t.Fatal(err)
	}
	// From the end: the nodes of the first keys are never read until
	// the root is left with them alone.
	for i := 4999; i >= 10; i-- {
		k := fmt.Sprintf("k%05d", i)
		m = m.Delete(k)
		delete(want, k)
	}
	check(t, m, want)
}
