package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgress: grep, glob and a read_file of a large file send
// notifications/progress, with the client's token, before their response
// when the client gave a token, and none when it did not. A read of a
// small file sends none.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i%5))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("hay\n", 100)+"needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("a line of a large file\n", 100_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "", "--workspace", dir, "--state-dir", t.TempDir(), "--store", "memory")
	p.initialize()
	for i, c := range []struct {
		tool  string
		args  map[string]any
		token any
	}{
		{"grep", map[string]any{"pattern": "needle"}, "grep-1"},
		{"glob", map[string]any{"pattern": "**/*.txt"}, 7},
		{"grep", map[string]any{"pattern": "needle"}, nil},
		{"read_file", map[string]any{"file_path": "big.txt", "limit": 1}, "read-1"},
		{"read_file", map[string]any{"file_path": "big.txt", "limit": 1}, nil},
		{"read_file", map[string]any{"file_path": "d0/f0.txt"}, "read-2"},
	} {
		small := c.tool == "read_file" && c.args["file_path"] != "big.txt"
		params := callTool(c.tool, c.args)
		if c.token != nil {
			params["_meta"] = map[string]any{"progressToken": c.token}
		}
		before := len(p.out)
		if r := decodeToolResult(t, p.call(i+1, "tools/call", params)); r.IsError {
			t.Fatalf("%s: %s", c.tool, r.Content[0].Text)
		}
		var got []string
		for _, line := range p.out[before : len(p.out)-1] {
			var n struct {
				Method string `json:"method"`
				Params struct {
					Token    any     `json:"progressToken"`
					Progress float64 `json:"progress"`
					Message  string  `json:"message"`
				} `json:"params"`
			}
			if json.Unmarshal(line, &n) == nil && n.Method == "notifications/progress" {
				if fmt.Sprint(n.Params.Token) != fmt.Sprint(c.token) || n.Params.Message == "" {
					t.Errorf("%s: progress %s", c.tool, line)
				}
				got = append(got, n.Params.Message)
			}
		}
		switch {
		case c.token != nil && !small && len(got) == 0:
			t.Errorf("%s with a progress token: no notifications/progress before the response", c.tool)
		case (c.token == nil || small) && len(got) > 0:
			t.Errorf("%s without a progress token: %q", c.tool, got)
		}
	}
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, p.stderr)
	}
}
