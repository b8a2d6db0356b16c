package statetree_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/blobname"
	"github.com/wink-mcp/wink-mcp/statetree"
)

func TestDirRoundTrips(t *testing.T) {
	h := statetree.Hash([]byte("x"))
	for _, tt := range []struct {
		name    string
		entries []statetree.Entry
	}{
		{"empty", nil},
		{"content-addressed", []statetree.Entry{
			{Name: "a", Hash: h, Size: 1},
			{Name: "a-b", Dir: true, Hash: h},
			{Name: "é" + strings.Repeat("n", 300), Hash: h, Size: 1 << 40},
		}},
		{"located", []statetree.Entry{
			{Name: "a", Hash: blobname.Located(h, 1), Size: 1},
			{Name: "b", Hash: blobname.Located(h, 1<<40), Size: statetree.ChunkSize},
			{Name: "c", Hash: blobname.Located(h, 1<<63), Size: 0},
		}},
		{"mixed", []statetree.Entry{
			{Name: "a", Hash: h, Size: 1},
			{Name: "b", Hash: blobname.Located(h, 7), Size: 1},
			{Name: "c", Dir: true, Hash: h},
			{Name: "d", Hash: blobname.Located(h, 8), Size: 1},
			{Name: "e", Hash: h, Size: 3 * statetree.ChunkSize},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := statetree.EncodeDir(tt.entries)
			if err != nil {
				t.Fatal(err)
			}
			got, err := statetree.DecodeDir(b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.entries) {
				t.Fatalf("%+v, want %+v", got, tt.entries)
			}
			if !statetree.Names(b) {
				t.Fatal("Names: a directory blob names nothing")
			}
		})
	}
}

// TestDecodesFormat5: a directory blob that format 5 wrote (testdata, by
// build 955e8aa) still decodes, and its entries encode to the same
// bytes: a directory of no located file is encoded as it was.
func TestDecodesFormat5(t *testing.T) {
	b, err := os.ReadFile("testdata/format5.wdir")
	if err != nil {
		t.Fatal(err)
	}
	h := statetree.Hash
	want := []statetree.Entry{
		{Name: "a.txt", Size: 5, Hash: h([]byte("hello"))},
		{Name: "big.bin", Size: 3*statetree.ChunkSize + 7, Hash: h([]byte("chunk list"))},
		{Name: "empty", Hash: h(nil)},
		{Name: "sub", Dir: true, Hash: h([]byte("dir"))},
		{Name: "é" + strings.Repeat("n", 200), Size: 1 << 40, Hash: h([]byte("x"))},
	}
	got, err := statetree.DecodeDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	again, err := statetree.EncodeDir(got)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("encoded again: %q, %v; want the format 5 blob", again, err)
	}
}

// TestNames: a blob that names others is told from a file's content.
func TestNames(t *testing.T) {
	dir, err := statetree.EncodeDir([]statetree.Entry{{Name: "f", Hash: blobname.Located(statetree.Hash(nil), 3)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		blob []byte
		want bool
	}{
		{"directory of a located file", dir, true},
		{"file", []byte("package main\n"), false},
		{"empty file", nil, false},
	} {
		if got := statetree.Names(tt.blob); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzDirCodec: any blob either fails DecodeDir, or decodes to entries
// that encode to it again.
func FuzzDirCodec(f *testing.F) {
	h := statetree.Hash(nil)
	for _, entries := range [][]statetree.Entry{
		nil,
		{{Name: "a", Hash: h, Size: 3}, {Name: "b", Dir: true, Hash: h}},
		{{Name: "a", Hash: blobname.Located(h, 300), Size: 3}, {Name: "b", Hash: h}},
	} {
		b, err := statetree.EncodeDir(entries)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := statetree.DecodeDir(b)
		if err != nil {
			return
		}
		again, err := statetree.EncodeDir(entries)
		if err != nil {
			t.Fatalf("decoded %+v, which does not encode: %v", entries, err)
		}
		if !bytes.Equal(again, b) {
			// Only a uvarint written longer than it need be differs.
			back, err := statetree.DecodeDir(again)
			if err != nil || !slices.Equal(back, entries) {
				t.Fatalf("encoded again as %q: %+v, %v", again, back, err)
			}
		}
	})
}

func TestEncodeDirRejects(t *testing.T) {
	h := statetree.Hash(nil)
	tests := []struct {
		name    string
		entries []statetree.Entry
	}{
		{"out of order", []statetree.Entry{{Name: "b", Hash: h}, {Name: "a", Hash: h}}},
		{"duplicate", []statetree.Entry{{Name: "a", Hash: h}, {Name: "a", Hash: h}}},
		{"slash", []statetree.Entry{{Name: "a/b", Hash: h}}},
		{"empty name", []statetree.Entry{{Name: "", Hash: h}}},
		{"bad hash", []statetree.Entry{{Name: "a", Hash: "abc"}}},
		{"bad sequence", []statetree.Entry{{Name: "a", Hash: h + "@x"}}},
		{"sequence 0", []statetree.Entry{{Name: "a", Hash: h + "@0"}}},
		{"located directory", []statetree.Entry{{Name: "a", Dir: true, Hash: blobname.Located(h, 1)}}},
		{"located and chunked", []statetree.Entry{{Name: "a", Size: statetree.ChunkSize + 1, Hash: blobname.Located(h, 1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := statetree.EncodeDir(tt.entries); err == nil {
				t.Fatal("encoded")
			}
		})
	}
}

func TestDecodeDirRejects(t *testing.T) {
	good, _ := statetree.EncodeDir([]statetree.Entry{{Name: "a", Hash: statetree.Hash(nil), Size: 3}})
	// located is good with kind 'l' and sequence seq, which a uvarint
	// holds in one byte.
	located := func(seq byte, size byte) []byte {
		b := bytes.Clone(good)
		b[5], b[7] = 'l', size
		return append(b, seq)
	}
	big, _ := statetree.EncodeDir([]statetree.Entry{{Name: "a", Hash: statetree.Hash(nil), Size: statetree.ChunkSize + 1}})
	big[5] = 'l'
	if _, err := statetree.DecodeDir(located(9, 3)); err != nil {
		t.Fatalf("a located entry does not decode: %v", err)
	}
	tests := []struct {
		name string
		blob []byte
	}{
		{"no header", good[5:]},
		{"truncated", good[:len(good)-1]},
		{"bad kind", append(append([]byte("wdir1"), 'x'), good[6:]...)},
		{"not sorted", append(bytes.Clone(good), good[5:]...)},
		{"located without sequence", located(9, 3)[:len(good)]},
		{"located at 0", located(0, 3)},
		{"located, sequence truncated", located(0x80, 3)},
		{"located and chunked", append(big, 9)},
		{"directory of a size", func() []byte { b := bytes.Clone(good); b[5] = 'd'; return b }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := statetree.DecodeDir(tt.blob); err == nil {
				t.Fatal("decoded")
			}
		})
	}
}

// TestLocatedFileChecked: a located file reads back through a Getter
// that serves it by its located name, and one whose content is not what
// the name's hash says fails to read.
func TestLocatedFileChecked(t *testing.T) {
	data := []byte("hello")
	name := blobname.Located(statetree.Hash(data), 42)
	for _, tt := range []struct {
		name   string
		served []byte
		ok     bool
	}{
		{"its content", data, true},
		{"another content", []byte("jello"), false},
	} {
		get := func(h string) ([]byte, error) {
			if h != name {
				return nil, errors.New("missing")
			}
			return tt.served, nil
		}
		got, err := statetree.GetFile(name, int64(len(data)), get)
		if tt.ok && (err != nil || !bytes.Equal(got, data)) || !tt.ok && err == nil {
			t.Errorf("%s: %q, %v", tt.name, got, err)
		}
	}
}

func TestFilesRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, statetree.ChunkSize, statetree.ChunkSize + 1, 3*statetree.ChunkSize + 7} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + i/statetree.ChunkSize) // no two chunks alike
		}
		blobs := map[string][]byte{}
		h := statetree.PutFile(data, func(h string, b []byte) { blobs[h] = b })
		if h != statetree.PutFile(data, nil) {
			t.Fatalf("%d bytes: the hash depends on put", size)
		}
		chunks := (size + statetree.ChunkSize - 1) / statetree.ChunkSize
		if want := max(1, chunks+min(1, chunks-1)); len(blobs) != want {
			t.Fatalf("%d bytes: %d blobs, want %d", size, len(blobs), want)
		}
		for _, b := range blobs {
			if len(b) > statetree.ChunkSize {
				t.Fatalf("%d bytes: a blob of %d bytes", size, len(b))
			}
		}
		get := func(h string) ([]byte, error) {
			if b, ok := blobs[h]; ok {
				return b, nil
			}
			return nil, errors.New("missing")
		}
		back, err := statetree.GetFile(h, int64(size), get)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("%d bytes: got %d bytes, %v", size, len(back), err)
		}
		hs, err := statetree.FileBlobs(h, int64(size), get)
		if err != nil || len(hs) != len(blobs) {
			t.Fatalf("%d bytes: FileBlobs %d hashes, %v; want the %d blobs", size, len(hs), err, len(blobs))
		}
		for _, b := range hs {
			if blobs[b] == nil && size > 0 {
				t.Fatalf("%d bytes: FileBlobs names %s, not a blob of the file", size, b)
			}
		}
		if size > statetree.ChunkSize {
			if _, err := statetree.GetFile(h, int64(size+statetree.ChunkSize), get); err == nil {
				t.Fatalf("%d bytes: read with a wrong size", size)
			}
		}
	}
}
