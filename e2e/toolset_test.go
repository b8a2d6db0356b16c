package e2e

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// treeState lists every directory, file (mode and content) and link under
// dir, for byte-for-byte comparisons.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := filepath.ToSlash(rel) + " " + info.Mode().String()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(data)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// toolCaller calls a tool and returns its first text block, whether it
// failed, and the whole result as JSON.
type toolCaller func(name string, args map[string]any) (text string, isErr bool, raw json.RawMessage)

// TestWorkspaceToolsetOnDisk drives the built binary's workspace tools
// beyond read, write and edit on a disk workspace, with a client of each
// era: raw frames (2025-11-25) and the official Go SDK's client in its
// default mode (2026-07-28). See checkToolset.
func TestWorkspaceToolsetOnDisk(t *testing.T) {
	t.Run("raw frames", func(t *testing.T) {
		dir, state := toolsetFixture(t)
		p := start(t, "", "--workspace", dir, "--state-dir", state, "--store", "memory")
		p.initialize()
		id := 0
		checkToolset(t, dir, state, func(name string, args map[string]any) (string, bool, json.RawMessage) {
			t.Helper()
			id++
			f := p.call(id, "tools/call", callTool(name, args))
			r := decodeToolResult(t, f)
			return r.Content[0].Text, r.IsError, f.Result
		})
		p.closeStdin()
		if code := p.wait(); code != 0 {
			t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
		}
		checkNoTemporaryFiles(t, dir, state)
	})
	t.Run("Go SDK", func(t *testing.T) {
		dir, state := toolsetFixture(t)
		cmd := exec.Command(binary, "--workspace", dir, "--state-dir", state, "--store", "memory")
		cmd.Dir = t.TempDir()
		c := connectSDK(t, &mcp.CommandTransport{Command: cmd}, "")
		checkToolset(t, dir, state, func(name string, args map[string]any) (string, bool, json.RawMessage) {
			t.Helper()
			r, raw := c.callRaw(t, name, args)
			return r.text(), r.IsError, raw
		})
	})
}

// pngBytes is the start of a PNG file, enough for content sniffing.
const pngBytes = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"

// toolsetFixture returns a workspace directory for checkToolset, and a
// state directory.
func toolsetFixture(t *testing.T) (dir, state string) {
	t.Helper()
	dir, state = t.TempDir(), t.TempDir()
	for p, c := range map[string]string{
		".gitignore":    "build/\n",
		"build/out.bin": "out",
		"src/main.go":   "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
		"src/util.go":   "package main\n",
		"docs/logo.png": pngBytes,
		"notes/a.md":    "# A\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "src", "util.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, state
}

// checkToolset runs directory_tree (ignore and dot rules), file_info,
// read_multiple_files, read_file of an image (an image block),
// create_directory and move_file through call; a move refused by the
// read-before-write policy and an apply_edits that moves a directory and
// then fails both leave every byte of the tree as it was, and the failure
// names the closest match of the edit that missed, which the next call
// fixes.
func checkToolset(t *testing.T, dir, state string, call toolCaller) {
	t.Helper()
	must := func(name string, args map[string]any, want string) {
		t.Helper()
		text, isErr, _ := call(name, args)
		if isErr || !strings.HasPrefix(text, want) {
			t.Fatalf("%s: (isError=%v) %q, want %q...", name, isErr, text, want)
		}
	}

	// directory_tree: JSON structured content, without what .gitignore
	// ignores nor dot names.
	_, _, raw := call("directory_tree", map[string]any{"depth": 2})
	var tree struct {
		StructuredContent struct {
			Tree []struct {
				Name     string `json:"name"`
				Type     string `json:"type"`
				Children []struct {
					Name string `json:"name"`
					Type string `json:"type"`
				} `json:"children"`
			} `json:"tree"`
			Hidden int `json:"hidden"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range tree.StructuredContent.Tree {
		names = append(names, n.Name+":"+n.Type)
		for _, c := range n.Children {
			names = append(names, n.Name+"/"+c.Name+":"+c.Type)
		}
	}
	if got := strings.Join(names, " "); got != "docs:directory docs/logo.png:file notes:directory notes/a.md:file src:directory src/main.go:file src/util.go:file" || tree.StructuredContent.Hidden != 2 {
		t.Errorf("directory_tree: %s (hidden %d)", got, tree.StructuredContent.Hidden)
	}

	must("file_info", map[string]any{"path": "src/main.go"}, "Info for src/main.go.\n\ntype: file\nsize: 45 bytes\nlines: 5\nmodified: ")
	must("read_multiple_files", map[string]any{"paths": []string{"src/main.go", "nope.go"}},
		"Read 1 file; 1 could not be read.\n\n== src/main.go (5 lines of 5) ==\n   1 | package main")

	// An image comes back as an image block.
	_, isErr, raw := call("read_file", map[string]any{"file_path": "docs/logo.png"})
	var img struct {
		Content []struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MIMEType string `json:"mimeType"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &img); err != nil {
		t.Fatal(err)
	}
	if isErr || len(img.Content) != 2 || img.Content[1].Type != "image" || img.Content[1].MIMEType != "image/png" ||
		img.Content[1].Data != base64.StdEncoding.EncodeToString([]byte(pngBytes)) {
		t.Errorf("read_file of an image: %s", raw)
	}

	must("create_directory", map[string]any{"path": "archive/2025"}, "Created directory archive/2025.")
	must("move_file", map[string]any{"source": "notes/a.md", "destination": "archive/2025/a.md"}, "Moved file notes/a.md to archive/2025/a.md.")
	if data, err := os.ReadFile(filepath.Join(dir, "archive", "2025", "a.md")); err != nil || string(data) != "# A\n" {
		t.Errorf("archive/2025/a.md: %q, %v", data, err)
	}

	// Refused by the policy: the destination was never read.
	before := treeState(t, dir)
	text, isErr, _ := call("move_file", map[string]any{"source": "src/main.go", "destination": "archive/2025/a.md", "overwrite": true})
	if !isErr || !strings.Contains(text, "File 'archive/2025/a.md' must be read before overwriting.") {
		t.Errorf("move over an unread file: %q", text)
	}
	// A directory moved, then an edit that misses: all of it undone. The
	// moved main.go stays known (it was read), so the edit runs and fails
	// on its old_string, naming the closest match.
	text, isErr, _ = call("apply_edits", map[string]any{"edits": []map[string]any{
		{"op": "move", "source": "src", "destination": "lib/src"},
		{"op": "write", "file_path": "lib/README.md", "content": "lib\n"},
		{"op": "edit", "file_path": "lib/src/main.go", "old_string": "    println(\"hi\")", "new_string": "    println(\"bye\")"},
	}})
	if !isErr || !strings.Contains(text, "edits[2] (edit lib/src/main.go) failed: old_string not found in lib/src/main.go. Line 4 matches it except for whitespace (indentation)") {
		t.Errorf("apply_edits: %q", text)
	}
	if after := treeState(t, dir); after != before {
		t.Errorf("failed calls changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	checkNoTemporaryFiles(t, dir, state)

	// Fixed in one round trip, from what the error showed.
	must("apply_edits", map[string]any{"edits": []map[string]any{
		{"op": "move", "source": "src", "destination": "lib/src"},
		{"op": "edit", "file_path": "lib/src/main.go", "old_string": "\tprintln(\"hi\")", "new_string": "\tprintln(\"bye\")"},
	}}, "Applied 2 edits to 3 files.")
	if info, err := os.Stat(filepath.Join(dir, "lib", "src", "util.go")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the moved util.go: %v, %v", info, err)
	}
}
