package blobname_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/blobname"
)

func TestSplit(t *testing.T) {
	h := blobname.Hash([]byte("hello"))
	for _, tc := range []struct {
		name string
		hash string
		seq  uint64
		ok   bool
	}{
		{h, h, 0, true},
		{blobname.Located(h, 42), h, 42, true},
		{blobname.Located(h, 1<<63), h, 1 << 63, true},
		{h + "@0", "", 0, false},
		{h + "@", "", 0, false},
		{h + "@042", "", 0, false},
		{h + "@-1", "", 0, false},
		{h + "@1@2", "", 0, false},
		{strings.ToUpper(h), "", 0, false},
		{h[:63], "", 0, false},
		{h[:63] + "g", "", 0, false},
		{h + "@+1", "", 0, false},
		{h + "@18446744073709551616", "", 0, false},
		{"", "", 0, false},
	} {
		hash, seq, ok := blobname.Split(tc.name)
		if hash != tc.hash || seq != tc.seq || ok != tc.ok {
			t.Errorf("Split(%q) = %q, %d, %v; want %q, %d, %v", tc.name, hash, seq, ok, tc.hash, tc.seq, tc.ok)
		}
		sum, seq, ok := blobname.Decode(tc.name)
		if hex.EncodeToString(sum[:]) != tc.hash && tc.ok || seq != tc.seq || ok != tc.ok {
			t.Errorf("Decode(%q) = %x, %d, %v; want %q, %d, %v", tc.name, sum, seq, ok, tc.hash, tc.seq, tc.ok)
		}
	}
}

func ExampleLocated() {
	name := blobname.Located(blobname.Hash([]byte("hello\n")), 7)
	hash, seq, _ := blobname.Split(name)
	fmt.Println(hash[:8], seq)
	// Output: 5891b5b5 7
}

// BenchmarkDecode measures the parse of a located name, which encoding a
// directory makes for each of its entries.
func BenchmarkDecode(b *testing.B) {
	name := blobname.Located(blobname.Hash([]byte("hello")), 123456)
	for b.Loop() {
		if _, _, ok := blobname.Decode(name); !ok {
			b.Fatal("not a name")
		}
	}
}
