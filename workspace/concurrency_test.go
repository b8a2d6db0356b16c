package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/session"
)

// TestTwoSessionsOnDisk: sessions share a disk workspace but not their
// read-before-write memory, and each sees the other's changes.
func TestTwoSessionsOnDisk(t *testing.T) {
	h := newHarness(t, backends[1], map[string]string{"shared.txt": "v1\n"})
	a, b := h.client("a"), h.client("b")
	ctx := context.Background()
	run := func(cs *mcptest.Client, s step) {
		t.Helper()
		r := cs.Call(ctx, s.tool, json.RawMessage(s.args), nil)
		if r.Said() != s.want || r.IsError != s.isErr {
			t.Errorf("%s: %s %s:\n got (isError=%v) %q\nwant (isError=%v) %q", cs.SessionID(), s.tool, s.args, r.IsError, r.Said(), s.isErr, s.want)
		}
	}
	run(a, step{"read_file", `{"file_path":"shared.txt"}`, "Read file shared.txt (lines 1-1 of 1).\n\n   1 | v1", false})
	// b has not read it: its own memory.
	run(b, step{"edit_file", `{"file_path":"shared.txt","old_string":"v1","new_string":"v2"}`, "File 'shared.txt' must be read before overwriting.", true})
	run(b, step{"read_file", `{"file_path":"shared.txt"}`, "Read file shared.txt (lines 1-1 of 1).\n\n   1 | v1", false})
	run(b, step{"edit_file", `{"file_path":"shared.txt","old_string":"v1","new_string":"v2"}`, "Replaced 1 occurrence in shared.txt.", false})
	// a read v1; b changed it since.
	run(a, step{"edit_file", `{"file_path":"shared.txt","old_string":"v1","new_string":"v3"}`, "File 'shared.txt' changed since it was last read; read it again before writing.", true})
	run(a, step{"write_file", `{"file_path":"shared.txt","content":"v3","overwrite":true}`, "File 'shared.txt' changed since it was last read; read it again before writing.", true})
	run(a, step{"read_file", `{"file_path":"shared.txt"}`, "Read file shared.txt (lines 1-1 of 1).\n\n   1 | v2", false})
	run(a, step{"edit_file", `{"file_path":"shared.txt","old_string":"v2","new_string":"v3"}`, "Replaced 1 occurrence in shared.txt.", false})
	// A change by another process counts too.
	if err := os.WriteFile(filepath.Join(h.dir, "shared.txt"), []byte("v4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(a, step{"edit_file", `{"file_path":"shared.txt","old_string":"v4","new_string":"v5"}`, "File 'shared.txt' changed since it was last read; read it again before writing.", true})
}

// TestMemorySessionsAreIsolated: each session has its own memory tree,
// started from the same base.
func TestMemorySessionsAreIsolated(t *testing.T) {
	h := newHarness(t, backends[0], map[string]string{"base.txt": "base"})
	a, b := h.client("a"), h.client("b")
	ctx := context.Background()
	if r := a.Call(ctx, "write_file", json.RawMessage(`{"file_path":"mine.txt","content":"a"}`), nil); r.IsError {
		t.Fatal("write failed")
	}
	if got := b.Call(ctx, "glob", json.RawMessage(`{"pattern":"**"}`), nil).Text(); got != "Found 1 file matching ** under /.\n\nbase.txt" {
		t.Errorf("session b sees %q", got)
	}
	if got := a.Call(ctx, "glob", json.RawMessage(`{"pattern":"**"}`), nil).Text(); got != "Found 2 files matching ** under /.\n\nbase.txt\nmine.txt" {
		t.Errorf("session a sees %q", got)
	}
}

// TestConcurrentWritesAreAtomic: two sessions overwrite one disk file many
// times over while a reader reads it directly; the reader only ever sees a
// whole version, never a torn mix.
func TestConcurrentWritesAreAtomic(t *testing.T) {
	h := newHarness(t, backends[1], map[string]string{"big.txt": strings.Repeat("0", 1<<16)}, harnessOpts{opts: Options{NoReadBeforeWrite: true}})
	versions := map[string]bool{strings.Repeat("0", 1<<16): true}
	for c := range "ab" {
		for i := range 20 {
			versions[strings.Repeat(fmt.Sprintf("%c%d", 'a'+c, i%10), 1<<15)] = true
		}
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for c := range 2 {
		cs := h.client(fmt.Sprint("writer", c))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				content := strings.Repeat(fmt.Sprintf("%c%d", 'a'+c, i%10), 1<<15)
				args := fmt.Sprintf(`{"file_path":"big.txt","content":%q,"overwrite":true}`, content)
				if r := cs.Call(context.Background(), "write_file", json.RawMessage(args), nil); r.IsError {
					t.Errorf("write: %s", r.Text())
					return
				}
			}
		}()
	}
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(filepath.Join(h.dir, "big.txt"))
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if !versions[string(data)] {
				t.Errorf("torn read: %d bytes starting %q", len(data), data[:min(len(data), 8)])
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	rg.Wait()
	entries, _ := os.ReadDir(h.dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want big.txt alone (no temporary files left)", len(entries))
	}
}

// TestParallelReadsAreAllRemembered reads many files at once in one
// session, with reads that fail among them: read-only calls run together,
// and every file read is known to the read-before-write policy afterwards,
// so that each can be overwritten.
func TestParallelReadsAreAllRemembered(t *testing.T) {
	const n = 48
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files)
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				args := fmt.Sprintf(`{"file_path":"f%02d.txt"}`, i)
				if text, isErr := h.callAs(ctx, h.cs, "read_file", args); isErr {
					t.Errorf("read_file %s: %s", args, text)
				}
			})
			wg.Go(func() {
				args := fmt.Sprintf(`{"file_path":"missing%02d.txt"}`, i)
				if text, isErr := h.callAs(ctx, h.cs, "read_file", args); !isErr {
					t.Errorf("read_file %s succeeded: %s", args, text)
				}
			})
		}
		wg.Wait()
		for i := range n {
			args := fmt.Sprintf(`{"file_path":"f%02d.txt","content":"new","overwrite":true}`, i)
			if text, isErr := h.call("write_file", args); isErr {
				t.Errorf("write_file after reading it: %s", text)
			}
		}
	})
}

// TestViewsObserveTheirOwnCall: two calls that run at once each tell the
// policy the version they read themselves, although someone changed the
// file in between.
func TestViewsObserveTheirOwnCall(t *testing.T) {
	h := newHarness(t, backends[1], map[string]string{"a.txt": "v1"})
	s := h.session(h.cs)
	newCall := func() *view {
		tx, err := s.BeginRead()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tx.Commit)
		v, err := session.CallResource(tx, viewKey)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first, second := newCall(), newCall()
	read := func(v *view) {
		if _, err := v.ReadFile("a.txt"); err != nil {
			t.Fatal(err)
		}
	}
	read(first)
	if err := os.WriteFile(filepath.Join(h.dir, "a.txt"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	read(second)
	for _, c := range []struct {
		v    *view
		want string
	}{{first, "v1"}, {second, "v2"}} {
		if got, _, ok := c.v.Observed("a.txt"); got != hashVersion([]byte(c.want)) || !ok {
			t.Errorf("observed %q, %v; want the version of %q", got, ok, c.want)
		}
	}
	if _, _, ok := newCall().Observed("a.txt"); ok {
		t.Error("a call that read nothing observed a.txt")
	}
}
