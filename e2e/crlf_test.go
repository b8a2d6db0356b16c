package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// crlfFiles are the files TestCRLFEdits edits: lines ending in "\r\n", one
// with a BOM, and one of mixed line ends.
var crlfFiles = map[string]string{
	"win.go":   "package main\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n}\r\n",
	"bom.txt":  "\uFEFFfirst\r\nsecond\r\nthird\r\n",
	"mixed.md": "# Title\r\nbody\nend\r\n",
}

// TestCRLFEdits: through the official Go SDK client over stdio, edit_file
// and apply_edits edit files whose lines end in "\r\n" with strings written
// with "\n", in a disk workspace (--workspace) and in a memory one
// (--mount); each file keeps its "\r\n" and its BOM, the new lines
// included, a file of mixed line ends is matched as written, and a real
// difference still fails with the near-miss diff, changing nothing. The
// bytes of each file are checked: on disk as the directory holds them, in
// memory as read_file's lines and file_info's size give them.
func TestCRLFEdits(t *testing.T) {
	steps := []struct {
		tool    string
		args    map[string]any
		want    string // the start of the result's text
		isError bool
	}{
		{"edit_file", map[string]any{"file_path": "win.go", "old_string": "func main() {\n\tprintln(\"hi\")\n}\n", "new_string": "func main() {\n\tprintln(\"hi\")\n\tprintln(\"bye\")\n}\n"},
			"Replaced 1 occurrence in win.go.", false},
		{"apply_edits", map[string]any{"edits": []any{
			map[string]any{"op": "edit", "file_path": "win.go", "old_string": "package main\n\n", "new_string": "package main\n\nimport \"os\"\n\n"},
			map[string]any{"op": "edit", "file_path": "bom.txt", "old_string": "first\nsecond\n", "new_string": "1\n2\n"},
			map[string]any{"op": "edit", "file_path": "bom.txt", "old_string": "third", "new_string": "3\n4", "replace_all": true},
		}}, "Applied 3 edits to 2 files.", false},
		{"edit_file", map[string]any{"file_path": "mixed.md", "old_string": "body\nend\r\n", "new_string": "text\nthe end\r\n"},
			"Replaced 1 occurrence in mixed.md.", false},
		{"edit_file", map[string]any{"file_path": "mixed.md", "old_string": "# Title\ntext", "new_string": "x"},
			"old_string not found in mixed.md. Lines 1-2 match it except for whitespace (trailing whitespace)", true},
		{"apply_edits", map[string]any{"edits": []any{
			map[string]any{"op": "edit", "file_path": "win.go", "old_string": "import \"os\"\n", "new_string": ""},
			map[string]any{"op": "edit", "file_path": "win.go", "old_string": "func main() {\n  println(\"hi\")", "new_string": "x"},
		}}, "edits[1] (edit win.go) failed: old_string not found in win.go. Lines 4-5 match it except for whitespace (indentation)", true},
	}
	want := map[string]string{
		"win.go":   "package main\r\n\r\nimport \"os\"\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n\tprintln(\"bye\")\r\n}\r\n",
		"bom.txt":  "\uFEFF1\r\n2\r\n3\r\n4\r\n",
		"mixed.md": "# Title\r\ntext\nthe end\r\n",
	}
	for _, tc := range []struct {
		name string
		args func(dir string) []string
		disk bool // whether the workspace is dir itself
	}{
		{"disk", func(dir string) []string { return []string{"--workspace", dir} }, true},
		{"memory", func(dir string) []string { return []string{"--mount", dir, "--store", "memory"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range crlfFiles {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(binary, append(tc.args(dir), "--state-dir", t.TempDir())...)
			cmd.Dir = t.TempDir()
			c := connectSDK(t, &mcp.CommandTransport{Command: cmd}, "")
			for name := range crlfFiles {
				if r := c.call(t, "read_file", map[string]any{"file_path": name}); r.IsError {
					t.Fatalf("read_file %s: %+v", name, r)
				}
			}
			for _, s := range steps {
				r := c.call(t, s.tool, s.args)
				if r.IsError != s.isError || !strings.HasPrefix(r.text(), s.want) {
					t.Errorf("%s %v:\n got (isError=%v) %q\nwant (isError=%v) %q...", s.tool, s.args, r.IsError, r.text(), s.isError, s.want)
				}
			}
			for name, w := range want {
				var got string
				if tc.disk {
					data, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					got = string(data)
				} else {
					got = memoryFile(t, c, name)
					if data, _ := os.ReadFile(filepath.Join(dir, name)); string(data) != crlfFiles[name] {
						t.Errorf("the mount's host file %s changed: %q", name, data)
					}
				}
				if got != w {
					t.Errorf("%s holds\n%q\nwant\n%q", name, got, w)
				}
			}
		})
	}
}

// memoryFile returns the bytes of a workspace file as the server holds
// them: read_file's lines (which keep a "\r" before each "\n") joined by
// "\n", with a final "\n" when file_info's size counts one.
func memoryFile(t *testing.T, c sdkClient, name string) string {
	t.Helper()
	r := c.call(t, "read_file", map[string]any{"file_path": name})
	info := c.call(t, "file_info", map[string]any{"path": name})
	if r.IsError || info.IsError {
		t.Fatalf("read_file %s: %+v; file_info: %+v", name, r, info)
	}
	var lines []string
	raw, _ := r.StructuredContent["lines"].([]any)
	for _, l := range raw {
		s, _ := l.(string)
		lines = append(lines, s)
	}
	text := strings.Join(lines, "\n")
	size, _ := info.StructuredContent["size"].(float64)
	switch int(size) {
	case len(text):
	case len(text) + 1:
		text += "\n"
	default:
		t.Fatalf("%s: %d bytes of lines, file_info says %v", name, len(text), size)
	}
	return text
}
