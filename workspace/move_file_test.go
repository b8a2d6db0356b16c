package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMoveFile: move_file on both backends: renames, moves across and
// into new directories, moves directories, refuses what it must, and the
// read-before-write memory follows a moved file.
func TestMoveFile(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"rename and move", []step{
			{"move_file", `{"source":"README.md","destination":"README.txt"}`, "Moved file README.md to README.txt.", false},
			{"move_file", `{"source":"/README.txt","destination":"new/dir/README.txt"}`, "Moved file README.txt to new/dir/README.txt.", false},
			{"read_file", `{"file_path":"new/dir/README.txt","limit":1}`, "Read file new/dir/README.txt (lines 1-1 of 3)...", false},
			{"read_file", `{"file_path":"README.md"}`, "File does not exist: README.md", true},
		}},
		{"directory", []step{
			{"move_file", `{"source":"src","destination":"lib/src"}`, "Moved directory src to lib/src.", false},
			{"glob", `{"pattern":"**","path":"lib"}`, "Found 3 files matching ** under lib.\n\nlib/src/main.go\nlib/src/util/a.go\nlib/src/util/b.txt", false},
			{"ls", `{"path":"src"}`, "Directory does not exist: src", true},
		}},
		{"refusals", []step{
			{"move_file", `{"source":"nope","destination":"x"}`, "No such file or directory: nope", true},
			{"move_file", `{"source":"docs/guide.md","destination":"README.md"}`, "Destination README.md already exists; pass overwrite: true to replace it.", true},
			{"move_file", `{"source":"src","destination":"docs"}`, "Destination docs is a directory; name the new path itself, such as docs/src.", true},
			{"move_file", `{"source":"src","destination":"src/util/src"}`, "Cannot move directory src into itself (src/util/src).", true},
			{"move_file", `{"source":"src","destination":"//src"}`, "Source and destination are the same path: src.", true},
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md...", false},
			{"move_file", `{"source":"src","destination":"README.md","overwrite":true}`, "Destination README.md is a file; a directory cannot replace it.", true},
			{"move_file", `{"source":"docs/guide.md","destination":"README.md/x"}`, "Cannot use README.md/x: README.md is a file, not a directory.", true},
			{"move_file", `{"source":"/","destination":"x"}`, "source: A file path is required; \"/\" names the workspace root.", true},
			{"move_file", `{"source":"a","destination":"../x"}`, "destination: Path segments may not include '.' or '..'.", true},
			{"ls", `{}`, "Listed /: 6 entries....", false},
		}},
		{"overwrite needs a read destination", []step{
			{"move_file", `{"source":"docs/guide.md","destination":"README.md","overwrite":true}`, "File 'README.md' must be read before overwriting.", true},
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md...", false},
			{"move_file", `{"source":"docs/guide.md","destination":"README.md","overwrite":true}`, "Moved file docs/guide.md to README.md, replacing the file there.", false},
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md (lines 1-1 of 1).\n\n   1 | guide", false},
		}},
		{"the memory follows the file", []step{
			{"read_file", `{"file_path":"src/main.go"}`, "Read file src/main.go...", false},
			{"move_file", `{"source":"src","destination":"app"}`, "Moved directory src to app.", false},
			// Known before the move, known after it; never read, still not.
			{"edit_file", `{"file_path":"app/main.go","old_string":"main()","new_string":"run()"}`, "Replaced 1 occurrence in app/main.go.", false},
			{"edit_file", `{"file_path":"app/util/a.go","old_string":"a","new_string":"b"}`, "File 'app/util/a.go' must be read before overwriting.", true},
			// A known file moved over by an unknown one is unknown.
			{"read_file", `{"file_path":"docs/guide.md"}`, "Read file docs/guide.md...", false},
			{"move_file", `{"source":"app/util/b.txt","destination":"docs/guide.md","overwrite":true}`, "Moved file app/util/b.txt to docs/guide.md, replacing the file there.", false},
			{"edit_file", `{"file_path":"docs/guide.md","old_string":"b","new_string":"c"}`, "File 'docs/guide.md' must be read before overwriting.", true},
		}},
		{"apply_edits", []step{
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md...", false},
			{"apply_edits", `{"edits":[{"op":"move","source":"README.md","destination":"doc/README.md"},{"op":"edit","file_path":"doc/README.md","old_string":"Title","new_string":"Heading"}]}`,
				"Applied 2 edits to 2 files.\n\nedits[0]: Moved file README.md to doc/README.md.\nedits[1]: Replaced 1 occurrence in doc/README.md.", false},
			// A failing operation puts the moved directory back.
			{"apply_edits", `{"edits":[{"op":"move","source":"src","destination":"lib/src"},{"op":"edit","file_path":"lib/src/main.go","old_string":"x","new_string":"y"}]}`,
				"edits[1] (edit lib/src/main.go) failed: File 'lib/src/main.go' must be read before overwriting. No edit was applied.", true},
			{"ls", `{"path":"src"}`, "Listed src: 2 entries.\n\nutil/\nmain.go (43 bytes)", false},
			{"ls", `{"path":"lib"}`, "Directory does not exist: lib", true},
			{"apply_edits", `{"edits":[{"op":"move","source":"src","path":"x"}]}`, "edits[0] (move src) failed: field path does not apply to op move. No edit was applied.", true},
		}},
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := newHarness(t, bk, sample)
				for _, s := range c.steps {
					s.check(t, h)
				}
			})
		}
	})
}

// TestFailedMoveLeavesNothing: a move that fails after it has moved a
// directory leaves the tree byte for byte as it was, modes included.
func TestFailedMoveLeavesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, sample)
		h.mustCall("read_file", `{"file_path":"docs/guide.md"}`)
		before := h.dump(h.cs)
		text, isErr := h.call("apply_edits", `{"edits":[
			{"op":"move","source":"src","destination":"deep/new/src"},
			{"op":"move","source":"README.md","destination":"deep/new/src/README.md"},
			{"op":"move","source":"bin","destination":"docs/guide.md","overwrite":true}]}`)
		if !isErr || !strings.Contains(text, "edits[2] (move bin) failed: Destination docs/guide.md is a file; a directory cannot replace it.") {
			t.Fatalf("apply_edits = %v %q, want edits[2] to fail", isErr, text)
		}
		if after := h.dump(h.cs); after != before {
			t.Errorf("the failed call changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// TestMoveOnDisk: a disk move renames in place, so modes and symbolic
// links travel with the tree; undone, they come back as they were; a tree
// holding a named pipe is not moved.
func TestMoveOnDisk(t *testing.T) {
	h := newHarness(t, backends[1], map[string]string{"d/secret.txt": "s\n", "d/sub/a.txt": "a\n"})
	if err := os.Chmod(filepath.Join(h.dir, "d", "secret.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/a.txt", filepath.Join(h.dir, "d", "link")); err != nil {
		t.Fatal(err)
	}
	before := h.dump(h.cs)
	step{"apply_edits", `{"edits":[{"op":"move","source":"d","destination":"e/d"},{"op":"rm","path":"nope"}]}`,
		"edits[1] (rm nope) failed: No such file or directory: nope No edit was applied.", true}.check(t, h)
	if after := h.dump(h.cs); after != before {
		t.Errorf("the failed move changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	step{"move_file", `{"source":"d","destination":"e/d"}`, "Moved directory d to e/d.", false}.check(t, h)
	want := strings.ReplaceAll(before, "d/", "e/d/")
	if got := h.dump(h.cs); got != "e/ -rwxr-xr-x\n"+want {
		t.Errorf("after the move:\n%s\nwant:\n%s", got, "e/ -rwxr-xr-x\n"+want)
	}
	if err := syscall.Mkfifo(filepath.Join(h.dir, "e", "d", "sub", "pipe"), 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	step{"move_file", `{"source":"e","destination":"f"}`, "Cannot move e: e/d/sub/pipe is a named pipe, which the workspace does not move.", true}.check(t, h)
}
