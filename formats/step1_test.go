package formats

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/store"
)

// put stores b in blobs under its hash and returns the hash.
func put(blobs map[string][]byte, b []byte) string {
	h := store.Hash(b)
	blobs[h] = b
	return h
}

// hashOf returns a hash that names nothing stored.
func hashOf(s string) string { return store.Hash([]byte(s)) }

// TestMigrate1: a session of format 1 (a JSON head naming a JSON root and
// a history) becomes a head of format 2 that carries the root document,
// with the history's roots replaced by the hashes of stored documents;
// every other field is kept. A session already migrated, or whose head is
// not of format 1, is left as it is, and running the step again changes
// nothing.
func TestMigrate1(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory(store.Options{})
	blobs := map[string][]byte{}
	slice := put(blobs, []byte(`{"objective":"x"}`))
	dir := hashOf("a directory")
	root := put(blobs, []byte(`{"slices":{"planning.plan":"`+slice+`"},"trees":{"workspace":"`+dir+`"}}`))
	empty := put(blobs, []byte(`{}`))
	gone := hashOf("a root swept long ago")
	hist := put(blobs, []byte(`{"next":3,"commits":[{"seq":1,"call_id":"c1","tool":"write_file","prev":"`+empty+`","root":"`+root+`","files":[{"path":"a.md"}]},{"seq":2,"call_id":"c2","tool":"x","prev":"`+gone+`","root":"`+root+`"}],"checkpoints":[{"name":"first","seq":1,"root":"`+root+`"}],"lost":1}`))
	head, _ := json.Marshal(head1{Root: root, Owner: "alice", History: hist})

	for name, h := range map[string][]byte{"one": head, "new": append([]byte("whd1"), 0, 0), "bad": []byte("nonsense")} {
		if _, err := st.Create(ctx, name, h); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := st.Load(ctx, "one")
	if _, err := st.Commit(ctx, "one", h.Rev, head, blobs); err != nil {
		t.Fatal(err)
	}
	m := &store.Migration{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if err := migrate1(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Load(ctx, "one")
	wantDoc := append([]byte("wdoc1s\x0dplanning.plan"), mustHex(t, slice)...)
	wantDoc = append(append(wantDoc, "t\x09workspace"...), mustHex(t, dir)...)
	var histHash string
	rest, ok := bytes.CutPrefix(got.Data, []byte("whd1\x01\x05alice"))
	if !ok || len(rest) < 32 {
		t.Fatalf("head %q", got.Data)
	}
	histHash, rest = hex.EncodeToString(rest[:32]), rest[32:]
	if !bytes.Equal(rest, wantDoc) {
		t.Errorf("document %q, want %q", rest, wantDoc)
	}
	hb, err := st.Blob(ctx, "one", histHash)
	if err != nil {
		t.Fatal(err)
	}
	docHash := store.Hash(wantDoc)
	emptyDoc, err := st.Blob(ctx, "one", store.Hash([]byte("wdoc1")))
	if err != nil || string(emptyDoc) != "wdoc1" {
		t.Errorf("the document of the empty root: %q, %v", emptyDoc, err)
	}
	if b, err := st.Blob(ctx, "one", docHash); err != nil || !bytes.Equal(b, wantDoc) {
		t.Errorf("the document as a blob: %q, %v", b, err)
	}
	for _, want := range []string{
		`"prev":"` + store.Hash([]byte("wdoc1")) + `"`, `"root":"` + docHash + `"`, `"prev":"` + gone + `"`,
		`"files":[{"path":"a.md"}]`, `"lost":1`, `"next":3`, `"name":"first"`,
	} {
		if !strings.Contains(string(hb), want) {
			t.Errorf("history %s lacks %s", hb, want)
		}
	}
	if strings.Contains(string(hb), root) {
		t.Errorf("history %s still names the JSON root", hb)
	}
	for name, want := range map[string]string{"new": "whd1\x00\x00", "bad": "nonsense"} {
		if h, _ := st.Load(ctx, name); string(h.Data) != want {
			t.Errorf("session %s: head %q, want it left as %q", name, h.Data, want)
		}
	}
	if err := migrate1(ctx, m); err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Load(ctx, "one"); again.Rev != got.Rev {
		t.Errorf("run again, the step committed again")
	}
}

func mustHex(t *testing.T, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
