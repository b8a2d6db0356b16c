package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFileOverAnUnreadFile: write_file without overwrite over a file
// the session never read answers that the file exists and how to go on,
// not the read-before-write refusal; with overwrite it is that refusal.
func TestWriteFileOverAnUnreadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "", "--workspace", dir, "--state-dir", t.TempDir(), "--store", "memory")
	p.initialize()
	for i, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"file_path": "a.txt", "content": "new\n"}, "File already exists; use edit_file or overwrite: true."},
		{map[string]any{"file_path": "a.txt", "content": "new\n", "overwrite": true}, "must be read before overwriting"},
		{map[string]any{"file_path": "b.txt", "content": "b\n"}, "Created b.txt"},
		{map[string]any{"file_path": "b.txt", "content": "c\n", "overwrite": true}, "Overwrote b.txt"},
	} {
		r := decodeToolResult(t, p.call(i+1, "tools/call", callTool("write_file", c.args)))
		if !strings.Contains(r.Content[0].Text, c.want) {
			t.Errorf("write_file %v: %q, want %q", c.args, r.Content[0].Text, c.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "old\n" {
		t.Errorf("a.txt = %q, want it unchanged", data)
	}
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
	}
}
