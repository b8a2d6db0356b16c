package statetree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestChunksFollowContent: chunks are within their bounds and put back
// together give the input; an insertion in the middle of 1 MB changes the
// chunks around it and keeps the others, where fixed-size chunks would
// all shift.
func TestChunksFollowContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for i := 0; len(b) < 1<<20; i++ {
		b = fmt.Appendf(b, `"dir%03d/file%05d.go":"%016x",`, i%100, i, rng.Uint64())
	}
	cs := chunks(b)
	if got := bytes.Join(cs, nil); !bytes.Equal(got, b) {
		t.Fatal("the chunks put back together differ from the input")
	}
	for i, c := range cs {
		if len(c) > maxCut || len(c) < minCut && i != len(cs)-1 {
			t.Fatalf("chunk %d of %d bytes, want %d to %d", i, len(c), minCut, maxCut)
		}
	}
	t.Logf("%d chunks of %d bytes on average", len(cs), len(b)/len(cs))
	if avg := len(b) / len(cs); avg < 1<<10 || avg > 5<<10 {
		t.Errorf("chunks of %d bytes on average, want about 2.5 KiB", avg)
	}

	mid := len(b) / 2
	changed := append(append(bytes.Clone(b[:mid]), `"inserted/here.go":"0000000000000000",`...), b[mid:]...)
	before := map[string]bool{}
	for _, c := range cs {
		before[Hash(c)] = true
	}
	fresh := 0
	for _, c := range chunks(changed) {
		if !before[Hash(c)] {
			fresh++
		}
	}
	if fresh > 2 {
		t.Errorf("an insertion changed %d chunks, want at most 2", fresh)
	}
}

// TestBadChunkList: a chunk list that is not one fails decoding.
func TestBadChunkList(t *testing.T) {
	blobs := map[string][]byte{}
	for _, b := range [][]byte{[]byte("wcdc\x00short"), []byte("not a list")} {
		blobs[Hash(b)] = b
		if _, _, err := getSlice(Hash(b), func(h string) ([]byte, error) { return blobs[h], nil }); err == nil {
			t.Errorf("%q decoded as a chunk list", b)
		}
	}
}
