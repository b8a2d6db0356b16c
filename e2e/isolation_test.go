package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// isolationWrites is how many files the failing apply_edits of
// TestReadsSeeCommittedStateOnly writes before its last edit fails: enough
// for reads to be answered while it runs.
const isolationWrites = 10000

// diskIsolationWrites is isolationWrites for TestDiskReadsSeeCommittedStateOnly,
// whose writes each sync the call's undo journal: about 3 ms each here.
const diskIsolationWrites = 3000

// TestReadsSeeCommittedStateOnly: while an apply_edits of many writes runs
// and then fails on its last edit, wink://workspace/tree read through the
// process running it, and the tree and a file read through a second process
// on the same --session, never show a file of it; once it has failed, the
// session holds what it held before, and a write that commits is seen by
// both.
func TestReadsSeeCommittedStateOnly(t *testing.T) {
	state := t.TempDir()
	a := start(t, "", "--state-dir", state, "--session", "proj")
	a.initialize()
	ca := &stdioClient{p: a}
	if r := ca.call(t, "write_file", map[string]any{"file_path": "seed.txt", "content": "seed\n"}); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}
	b := start(t, "", "--state-dir", state, "--session", "proj")
	b.initialize()

	edits := make([]map[string]any, 0, isolationWrites+1)
	for i := range isolationWrites {
		edits = append(edits, map[string]any{"op": "write", "file_path": fmt.Sprintf("gen/%05d.txt", i), "content": "x\n"})
	}
	edits = append(edits, map[string]any{"op": "edit", "file_path": "seed.txt", "old_string": "NOT THERE", "new_string": "y"})
	call := sendCall(t, a, map[string]any{"name": "apply_edits", "arguments": map[string]any{"edits": edits}})

	// Read through a, and through b, until a answers the apply_edits.
	reads := 0
	for id := 1; call.answer == nil; id++ {
		checkTree(t, "a, during the call", call.read(id, "wink://workspace/tree"), 1)
		reads++
		checkTree(t, "b, during the call", b.call(100000+id, "resources/read", map[string]any{"uri": "wink://workspace/tree"}), 1)
		f := b.call(200000+id, "tools/call", map[string]any{"name": "read_file", "arguments": map[string]any{"file_path": "gen/00000.txt"}})
		if r := decodeResult(t, f); !r.IsError {
			t.Fatalf("b reads gen/00000.txt during the call: %+v", r)
		}
	}
	applied := call.answer
	var r result
	if err := json.Unmarshal(applied.Result, &r); err != nil || !r.IsError {
		t.Fatalf("apply_edits whose last edit fails = %s (%v)", applied.Result, err)
	}
	t.Logf("%d reads through each process while apply_edits ran", reads)
	checkTree(t, "a, after the call", a.call(300000, "resources/read", map[string]any{"uri": "wink://workspace/tree"}), 1)
	checkTree(t, "b, after the call", b.call(300001, "resources/read", map[string]any{"uri": "wink://workspace/tree"}), 1)

	if r := ca.call(t, "write_file", map[string]any{"file_path": "kept.txt", "content": "kept\n"}); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}
	checkTree(t, "a, after a write", a.call(300002, "resources/read", map[string]any{"uri": "wink://workspace/tree"}), 2)
	checkTree(t, "b, after a write", b.call(300003, "resources/read", map[string]any{"uri": "wink://workspace/tree"}), 2)
}

// A pendingCall is a tools/call sent through a process and not answered
// yet, while resources are read through the same process.
type pendingCall struct {
	t      *testing.T
	p      *proc
	answer *frame // the call's answer, once read
}

// pendingID is the id of a pendingCall's request.
const pendingID = 900000

// sendCall sends a tools/call with params through p, and returns it
// unanswered.
func sendCall(t *testing.T, p *proc, params map[string]any) *pendingCall {
	t.Helper()
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": pendingID, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	p.mustSend(string(req))
	return &pendingCall{t: t, p: p}
}

// read reads the resource uri through the call's process, under id, and
// returns the answer; the call's own answer, if it comes first, is kept
// in c.answer.
func (c *pendingCall) read(id int, uri string) frame {
	c.t.Helper()
	c.p.mustSend(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, id, uri))
	for {
		f, ok := c.p.await("")
		if !ok {
			c.t.Fatalf("the process ended; stderr:\n%s", c.p.stderr)
		}
		switch compactJSON(f.ID) {
		case fmt.Sprint(pendingID):
			c.answer = &f
		case fmt.Sprint(id):
			return f
		}
	}
}

// checkTree checks that f, the answer to a read of wink://workspace/tree
// of a memory workspace, lists want files and none of gen/.
func checkTree(t *testing.T, who string, f frame, want int) {
	t.Helper()
	checkTreeOf(t, who, "memory", f, want)
}

// checkTreeOf checks that f, the answer to a read of wink://workspace/tree
// of a workspace of kind (memory or disk), lists want files and none of
// gen/.
func checkTreeOf(t *testing.T, who, kind string, f frame, want int) {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("%s: reading the tree: %d %s", who, f.Error.Code, f.Error.Message)
	}
	var res struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil || len(res.Contents) != 1 {
		t.Fatalf("%s: tree %s (%v)", who, f.Result, err)
	}
	text := res.Contents[0].Text
	head := fmt.Sprintf("%s workspace, %d file", kind, want)
	if !strings.HasPrefix(text, head) || strings.Contains(text, "gen/") {
		t.Fatalf("%s: the tree reads %q, want %q... and nothing of gen/", who, truncate([]byte(text)), head)
	}
}

// decodeResult returns the tool result f answers.
func decodeResult(t *testing.T, f frame) result {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("JSON-RPC error %d %s", f.Error.Code, f.Error.Message)
	}
	var r result
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPlanReadsSeeCommittedStateOnly: while planning_add_step of 20,000
// steps runs as a dry run (it changes the plan, renders it and the diff
// of its change, and then puts the plan back: a planning call that
// changes the plan and is not kept), wink://planning/plan read through
// the process running it, and through a second process on the same
// --session, never shows a step of it. (The build before this test read
// the dry run's steps through the first process.)
func TestPlanReadsSeeCommittedStateOnly(t *testing.T) {
	state := t.TempDir()
	a := start(t, "", "--state-dir", state, "--session", "proj")
	a.initialize()
	ca := &stdioClient{p: a}
	if r := ca.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}); r.IsError {
		t.Fatalf("planning_setup_plan: %+v", r)
	}
	b := start(t, "", "--state-dir", state, "--session", "proj")
	b.initialize()

	steps := make([]string, 20000)
	for i := range steps {
		steps[i] = fmt.Sprintf("dry step %d", i)
	}
	call := sendCall(t, a, map[string]any{"name": "planning_add_step", "arguments": map[string]any{"steps": steps},
		"_meta": map[string]any{"io.github.wink-mcp/dryRun": true}})
	checkPlan := func(who string, f frame) {
		t.Helper()
		if f.Error != nil || !strings.Contains(string(f.Result), "1 [pending] draft") || strings.Contains(string(f.Result), "dry step") {
			t.Fatalf("%s: the plan reads %s", who, truncate(f.Result))
		}
	}
	reads := 0
	for id := 1; call.answer == nil; id++ {
		checkPlan("a, during the call", call.read(id, "wink://planning/plan"))
		reads++
		checkPlan("b, during the call", b.call(100000+id, "resources/read", map[string]any{"uri": "wink://planning/plan"}))
	}
	added := call.answer
	if r := decodeResult(t, *added); r.IsError || !strings.Contains(string(added.Result), "dry step 0") {
		t.Fatalf("the dry run of planning_add_step = %s", truncate(added.Result))
	}
	t.Logf("%d reads through each process while the dry run ran", reads)
	checkPlan("a, after the call", a.call(300000, "resources/read", map[string]any{"uri": "wink://planning/plan"}))
	checkPlan("b, after the call", b.call(300001, "resources/read", map[string]any{"uri": "wink://planning/plan"}))
}

// TestDiskReadsSeeCommittedStateOnly is TestReadsSeeCommittedStateOnly on
// a disk workspace (--workspace DIR), whose calls write the directory as
// they go: while an apply_edits that edits notes.md and then writes many
// new files runs and then fails on its last edit, wink://workspace/tree,
// notes.md and the first new file, read through the process running it
// and through a second process on the same --session and state
// directory, show the workspace as it was before the call (notes.md from
// the call's undo journal, the new files absent), though the directory
// holds the call's writes meanwhile; once it has failed, the directory
// holds what it held before, and a write that commits is seen by both.
func TestDiskReadsSeeCommittedStateOnly(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	args := []string{"--workspace", ws, "--state-dir", state, "--session", "proj"}
	a := start(t, "", args...)
	a.initialize()
	ca := &stdioClient{p: a}
	for _, f := range [][2]string{{"seed.txt", "seed\n"}, {"notes.md", "old notes\n"}} {
		if r := ca.call(t, "write_file", map[string]any{"file_path": f[0], "content": f[1]}); r.IsError {
			t.Fatalf("write_file %s: %+v", f[0], r)
		}
	}
	b := start(t, "", args...)
	b.initialize()

	edits := make([]map[string]any, 0, diskIsolationWrites+2)
	edits = append(edits, map[string]any{"op": "edit", "file_path": "notes.md", "old_string": "old notes", "new_string": "new notes"})
	for i := range diskIsolationWrites {
		edits = append(edits, map[string]any{"op": "write", "file_path": fmt.Sprintf("gen/%05d.txt", i), "content": "x\n"})
	}
	edits = append(edits, map[string]any{"op": "edit", "file_path": "seed.txt", "old_string": "NOT THERE", "new_string": "y"})
	call := sendCall(t, a, map[string]any{"name": "apply_edits", "arguments": map[string]any{"edits": edits}})

	// The reads begin once the call has written a file of gen/ (the
	// failed call removes them all before it is answered).
	first := filepath.Join(ws, "gen", "00000.txt")
	for end := time.Now().Add(failsafe); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(first); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("apply_edits wrote nothing of gen/; stderr:\n%s", a.stderr)
		}
	}

	// Read through a, and through b, until a answers the apply_edits.
	readA := call.read
	readB := func(id int, uri string) frame { return b.call(id, "resources/read", map[string]any{"uri": uri}) }
	reads, overlapped := 0, 0
	for id := 1; call.answer == nil; id += 10 {
		_, err := os.Stat(first)
		inFlight := err == nil
		for i, who := range []struct {
			name string
			read func(int, string) frame
		}{{"a", readA}, {"b", readB}} {
			id := id + 3*i
			checkTreeOf(t, who.name+", during the call", "disk", who.read(id, "wink://workspace/tree"), 2)
			checkFileResource(t, who.name+", during the call", who.read(id+1, "wink://workspace/files/notes.md"), "old notes\n")
			checkFileResource(t, who.name+", during the call", who.read(id+2, "wink://workspace/files/gen/00000.txt"), "")
		}
		reads++
		if _, err := os.Stat(first); inFlight && err == nil {
			overlapped++ // gen/00000.txt was on disk before and after the reads
		}
	}
	var r result
	if err := json.Unmarshal(call.answer.Result, &r); err != nil || !r.IsError {
		t.Fatalf("apply_edits whose last edit fails = %s (%v)", call.answer.Result, err)
	}
	t.Logf("%d rounds of reads through each process while apply_edits ran, %d of them while the directory held its writes throughout", reads, overlapped)
	if _, err := os.Stat(filepath.Join(ws, "gen")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the failed call, gen/ on disk: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(ws, "notes.md")); err != nil || string(data) != "old notes\n" {
		t.Errorf("after the failed call, notes.md on disk = %q, %v", data, err)
	}
	checkTreeOf(t, "a, after the call", "disk", readA(300000, "wink://workspace/tree"), 2)
	checkTreeOf(t, "b, after the call", "disk", readB(300001, "wink://workspace/tree"), 2)

	if r := ca.call(t, "write_file", map[string]any{"file_path": "kept.txt", "content": "kept\n"}); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}
	checkTreeOf(t, "a, after a write", "disk", readA(300002, "wink://workspace/tree"), 3)
	checkTreeOf(t, "b, after a write", "disk", readB(300003, "wink://workspace/tree"), 3)
	checkFileResource(t, "b, after a write", readB(300004, "wink://workspace/files/kept.txt"), "kept\n")
}

// checkFileResource checks that f, the answer to a read of a file's
// resource, holds want, or, when want is empty, that the file is not
// found (-32002).
func checkFileResource(t *testing.T, who string, f frame, want string) {
	t.Helper()
	if want == "" {
		if f.Error == nil || f.Error.Code != -32002 {
			t.Fatalf("%s: a file the call made reads %+v %s, want the error -32002", who, f.Error, truncate(f.Result))
		}
		return
	}
	if f.Error != nil {
		t.Fatalf("%s: reading a file: %d %s", who, f.Error.Code, f.Error.Message)
	}
	var res struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != want {
		t.Fatalf("%s: the file reads %s (%v), want %q", who, truncate(f.Result), err, want)
	}
}
