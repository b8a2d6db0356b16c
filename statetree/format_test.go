package statetree_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/statetree"
)

func TestDirRoundTrips(t *testing.T) {
	h := statetree.Hash([]byte("x"))
	entries := []statetree.Entry{
		{Name: "a", Hash: h, Size: 1},
		{Name: "a-b", Dir: true, Hash: h},
		{Name: "é" + strings.Repeat("n", 300), Hash: h, Size: 1 << 40},
	}
	b, err := statetree.EncodeDir(entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := statetree.DecodeDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("%d entries, want %d", len(got), len(entries))
	}
	for i := range got {
		if got[i] != entries[i] {
			t.Fatalf("entry %d: %+v, want %+v", i, got[i], entries[i])
		}
	}
	if empty, err := statetree.EncodeDir(nil); err != nil || len(empty) == 0 {
		t.Fatalf("empty directory: %q, %v", empty, err)
	}
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
	tests := []struct {
		name string
		blob []byte
	}{
		{"no header", good[5:]},
		{"truncated", good[:len(good)-1]},
		{"bad kind", append(append([]byte("wdir1"), 'x'), good[6:]...)},
		{"not sorted", append(bytes.Clone(good), good[5:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := statetree.DecodeDir(tt.blob); err == nil {
				t.Fatal("decoded")
			}
		})
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
