package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestDirectoryTree: the tree's levels, its text, and the ignore filter
// and dot-entry rule of ls, on both backends.
func TestDirectoryTree(t *testing.T) {
	files := map[string]string{
		".gitignore":       "build/\n*.log\n",
		".hidden/x":        "x",
		"build/out":        "o",
		"app.log":          "l",
		"src/main.go":      "package main\n",
		"src/util/a.go":    "package util\n",
		"src/util/deep/b":  "b",
		"src/.env":         "secret",
		"docs/guide.md":    "guide\n",
		"docs/img/x.png":   "png",
		"notes/empty.txt":  "",
		"notes/later/todo": "t",
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files)
		for _, s := range []step{
			{"directory_tree", `{}`, "Tree of /, 3 levels, 13 entries. 4 entries hidden (dot names or ignored by .gitignore); all: true shows them.\n\n" +
				"docs/\n  img/\n    x.png (3 bytes)\n  guide.md (6 bytes)\n" +
				"notes/\n  later/\n    todo (1 byte)\n  empty.txt (0 bytes)\n" +
				"src/ [1 hidden]\n  util/\n    deep/ ...\n    a.go (13 bytes)\n  main.go (13 bytes)", false},
			{"directory_tree", `{"path":"src","depth":1}`, "Tree of src, 1 level, 2 entries. 1 entry hidden (dot names or ignored by .gitignore); all: true shows them.\n\nutil/ ...\nmain.go (13 bytes)", false},
			{"directory_tree", `{"path":"/src/","depth":1,"all":true}`, "Tree of src, 1 level, 3 entries.\n\nutil/ ...\n.env (6 bytes)\nmain.go (13 bytes)", false},
			{"directory_tree", `{"depth":1,"all":true}`, "Tree of /, 1 level, 7 entries.\n\n.hidden/ ...\nbuild/ ...\ndocs/ ...\nnotes/ ...\nsrc/ ...\n.gitignore (13 bytes)\napp.log (1 byte)", false},
			{"directory_tree", `{"path":"notes/later","depth":10}`, "Tree of notes/later, 10 levels, 1 entry.\n\ntodo (1 byte)", false},
			{"directory_tree", `{"depth":0}`, "depth must be between 1 and 10.", true},
			{"directory_tree", `{"depth":11}`, "depth must be between 1 and 10.", true},
			{"directory_tree", `{"path":"src/main.go"}`, "Cannot show a tree of a file path; provide a directory.", true},
			{"directory_tree", `{"path":"nope"}`, "Directory does not exist: nope", true},
		} {
			s.check(t, h)
		}
		// The structured content is the tree as JSON: name, type, children.
		r := h.cs.Call(context.Background(), "directory_tree", json.RawMessage(`{"path":"docs","depth":2}`), nil)
		got, _ := json.Marshal(r.StructuredContent)
		want := `{"depth":2,"entries":3,"path":"docs","tree":[{"children":[{"name":"x.png","size":3,"type":"file"}],"name":"img","type":"directory"},{"name":"guide.md","size":6,"type":"file"}]}`
		if string(got) != want {
			t.Errorf("structured content:\n got %s\nwant %s", got, want)
		}
	})
}

// TestDirectoryTreeCap: a tree stops at the entry cap, breadth first, and
// says so.
func TestDirectoryTreeCap(t *testing.T) {
	files := map[string]string{}
	for i := range 4 {
		for j := range 3 {
			files[fmt.Sprintf("d%d/f%d", i, j)] = "x"
		}
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: 6}})
		step{"directory_tree", `{}`, "Tree of /, 3 levels, 6 entries. Capped at 6 entries: directories ending in \"/ ...\" are not expanded; show them on their own.\n\n" +
			"d0/\n  f0 (1 byte)\n  f1 (1 byte)\nd1/ ...\nd2/ ...\nd3/ ...", false}.check(t, h)
	})
}
