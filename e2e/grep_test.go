package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeTree writes files (slash path to content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// serveWorkspace starts the binary over stdio on the directory dir and
// connects the official Go SDK's client to it.
func serveWorkspace(t *testing.T, dir string) sdkClient {
	t.Helper()
	cmd := exec.Command(binary, "--workspace", dir, "--state-dir", t.TempDir())
	return connectSDK(t, &mcp.CommandTransport{Command: cmd}, "")
}

// grepPage is a page of grep's structured result.
type grepPage struct {
	Matches []struct {
		Path    string `json:"path"`
		Line    int    `json:"line"`
		Context bool   `json:"context"`
	} `json:"matches"`
	Files  []string `json:"files"`
	Counts []struct {
		Path  string `json:"path"`
		Count int    `json:"count"`
	} `json:"counts"`
	TotalMatches int    `json:"total_matches"`
	TotalFiles   int    `json:"total_files"`
	Stopped      bool   `json:"stopped"`
	Truncated    bool   `json:"truncated"`
	NextCursor   string `json:"next_cursor"`
}

// entries lists what a page shows: "path:line" for a matching line,
// "path:count" for a count, the path of a matching file.
func (p grepPage) entries() []string {
	var out []string
	for _, m := range p.Matches {
		if !m.Context {
			out = append(out, fmt.Sprintf("%s:%d", m.Path, m.Line))
		}
	}
	for _, c := range p.Counts {
		out = append(out, fmt.Sprintf("%s:%d", c.Path, c.Count))
	}
	return append(out, p.Files...)
}

func decodePage(t *testing.T, r result) grepPage {
	t.Helper()
	if r.IsError {
		t.Fatalf("grep failed: %s", r.text())
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p grepPage
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGrepOptions: grep's arguments through the official Go SDK over the
// built binary, on a disk workspace the test writes: each output mode,
// context lines as ripgrep shows them, case, type, multiline, a very long
// line shown around its match; bad arguments are clear errors and the
// server goes on serving.
func TestGrepOptions(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"src/main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\t// TODO: greet\n\tfmt.Println(\"hi\")\n}\n",
		"src/util.go":  "package main\n\n// todo: lower case\nfunc util() {}\n",
		"tools/gen.py": "# TODO: python\nprint('x')\n",
		"docs/a.md":    "# Title\n\nTODO in docs\n",
		"long.txt":     strings.Repeat("a", 6000) + "NEEDLE" + strings.Repeat("b", 6000) + "\n",
	})
	c := serveWorkspace(t, dir)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"content", map[string]any{"pattern": "TODO"},
			"Found 3 matches in 3 files.\n\ndocs/a.md:3: TODO in docs\nsrc/main.go:6: \t// TODO: greet\ntools/gen.py:1: # TODO: python"},
		{"files", map[string]any{"pattern": "TODO", "output_mode": "files_with_matches"},
			"Found 3 matching files.\n\ndocs/a.md\nsrc/main.go\ntools/gen.py"},
		{"count", map[string]any{"pattern": "main", "output_mode": "count"},
			"Found 3 matches in 2 files.\n\nsrc/main.go:2\nsrc/util.go:1"},
		{"context", map[string]any{"pattern": "TODO", "context": 1, "type": "go"},
			"Found 1 match in 1 file.\n\nsrc/main.go-5- func main() {\nsrc/main.go:6: \t// TODO: greet\nsrc/main.go-7- \tfmt.Println(\"hi\")"},
		{"before and after", map[string]any{"pattern": "^package|^func", "before": 0, "after": 1, "path": "src"},
			"Found 4 matches in 2 files.\n\nsrc/main.go:1: package main\nsrc/main.go-2- \n--\nsrc/main.go:5: func main() {\nsrc/main.go-6- \t// TODO: greet\n--\nsrc/util.go:1: package main\nsrc/util.go-2- \n--\nsrc/util.go:4: func util() {}"},
		{"case", map[string]any{"pattern": "todo", "case_insensitive": true, "type": "go"},
			"Found 2 matches in 2 files.\n\nsrc/main.go:6: \t// TODO: greet\nsrc/util.go:3: // todo: lower case"},
		{"type", map[string]any{"pattern": "TODO", "type": "py", "output_mode": "files_with_matches"},
			"Found 1 matching file.\n\ntools/gen.py"},
		{"multiline", map[string]any{"pattern": `main\(\) \{.*?Println`, "multiline": true},
			"Found 1 match in 1 file.\n\nsrc/main.go:5: func main() {\nsrc/main.go:6: \t// TODO: greet\nsrc/main.go:7: \tfmt.Println(\"hi\")"},
		{"not multiline", map[string]any{"pattern": `main\(\) \{.*?Println`}, "Found 0 matches in 0 files.\n\n(no matches)"},
		{"unknown type", map[string]any{"pattern": "x", "type": "golang"}, "Unknown type \"golang\"; the known types are "},
		{"bad mode", map[string]any{"pattern": "x", "output_mode": "lines"}, "Invalid output_mode \"lines\": use content, files_with_matches or count."},
		{"bad context", map[string]any{"pattern": "x", "context": 21}, "context must be between 0 and 20."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.call(t, "grep", tc.args).text(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	long := c.call(t, "grep", map[string]any{"pattern": "NEEDLE"}).text()
	if !strings.Contains(long, "long.txt:1: [... 5000 bytes before] ") || !strings.Contains(long, "aNEEDLEb") || len(long) > 4200 {
		t.Errorf("a long line is not shown as a window around its match: %d bytes, %.120q", len(long), long)
	}
}

// TestGrepPages: every output mode pages by its cursor to exactly the
// results of one search, each page with the totals of the whole search;
// a cursor of another mode is refused.
func TestGrepPages(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	var lines, paths, counts []string
	for i := range 1100 {
		p := fmt.Sprintf("d%d/f%04d.txt", i%3, i)
		files[p] = "hit one\nmiss\nhit two\n"
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		lines = append(lines, p+":1", p+":3")
		paths = append(paths, p)
		counts = append(counts, p+":2")
	}
	writeTree(t, dir, files)
	c := serveWorkspace(t, dir)
	cursors := map[string]string{}
	for _, tc := range []struct {
		mode  string
		want  []string
		pages int
	}{
		{"content", lines, 3},
		{"files_with_matches", paths, 2},
		{"count", counts, 2},
	} {
		var got []string
		pages := 0
		args := map[string]any{"pattern": "^hit", "output_mode": tc.mode}
		for {
			p := decodePage(t, c.call(t, "grep", args))
			pages++
			got = append(got, p.entries()...)
			if p.TotalFiles != len(paths) || tc.mode != "files_with_matches" && p.TotalMatches != len(lines) {
				t.Errorf("%s page %d totals: %d matches in %d files", tc.mode, pages, p.TotalMatches, p.TotalFiles)
			}
			if !p.Truncated {
				break
			}
			cursors[tc.mode] = p.NextCursor
			args["cursor"] = p.NextCursor
		}
		if pages != tc.pages || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %d pages, %d results, want %d pages of %d", tc.mode, pages, len(got), tc.pages, len(tc.want))
		}
	}
	r := c.call(t, "grep", map[string]any{"pattern": "^hit", "cursor": cursors["count"]})
	if want := "Invalid cursor: it is the next_cursor of grep with output_mode count, not content; pass the same output_mode with it."; !r.IsError || r.text() != want {
		t.Errorf("a cursor of another mode: %+v", r)
	}
}

// TestSearchDeadline: a grep or glob whose _meta timeoutMs is too short
// for a large tree answers with what it found, truncated and stopped,
// not an error; its cursor goes on from where it stopped, so that the
// pages hold every match once.
func TestSearchDeadline(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	found := map[string]bool{} // the files that hold the match, every tenth
	filler := strings.Repeat("filler line of text\n", 200)
	for i := range 20000 {
		p := fmt.Sprintf("d%02d/e%02d/f%05d.txt", i%50, i%7, i)
		files[p] = filler
		if i%10 == 0 {
			files[p] += "found here\n"
			found[p] = true
		}
	}
	writeTree(t, dir, files)
	c := serveWorkspace(t, dir)
	call := func(tool string, args map[string]any, timeoutMs int) result {
		res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: tool, Arguments: args, Meta: mcp.Meta{"io.github.wink-mcp/timeoutMs": timeoutMs},
		})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		var r result
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The shortest timeout that lets the search find something before it
	// is stopped depends on the machine: try them from short to long.
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		listed func(grepPage) int
	}{
		{"grep", map[string]any{"pattern": "found here", "output_mode": "files_with_matches"}, func(p grepPage) int { return len(p.Files) }},
		{"glob", map[string]any{"pattern": "**/*.txt"}, nil},
	} {
		var stopped result
		for ms := 5; ms <= 2560 && stopped.Content == nil; ms *= 2 {
			r := call(tc.tool, tc.args, ms)
			switch {
			case r.IsError && (strings.Contains(r.text(), "Deadline expired before executing") || strings.Contains(r.text(), "exceeded its deadline")):
				// Too short for this machine even to answer: a longer one.
				continue
			case r.IsError:
				t.Fatalf("%s with timeoutMs %d: %s", tc.tool, ms, r.text())
			}
			var page struct {
				Files     []string `json:"files"`
				Stopped   bool     `json:"stopped"`
				Truncated bool     `json:"truncated"`
			}
			b, _ := json.Marshal(r.StructuredContent)
			_ = json.Unmarshal(b, &page)
			if !page.Stopped {
				t.Fatalf("%s with timeoutMs %d searched the whole tree: %.200s", tc.tool, ms, r.text())
			}
			if !page.Truncated || !strings.Contains(r.text(), "the deadline stopped the search") {
				t.Errorf("%s stopped by its deadline: %.300s", tc.tool, r.text())
			}
			if len(page.Files) > 0 {
				stopped = r
			}
		}
		if stopped.Content == nil {
			t.Fatalf("%s: no timeout let it find files before stopping it", tc.tool)
		}
		if tc.tool != "grep" {
			continue
		}
		// The rest, without a deadline, from the cursor.
		p := decodePage(t, stopped)
		got := p.entries()
		args := map[string]any{"pattern": "found here", "output_mode": "files_with_matches", "cursor": p.NextCursor}
		for {
			p := decodePage(t, c.call(t, "grep", args))
			got = append(got, p.entries()...)
			if !p.Truncated {
				if p.TotalFiles != len(found) {
					t.Errorf("total %d files, want %d", p.TotalFiles, len(found))
				}
				break
			}
			args["cursor"] = p.NextCursor
		}
		seen := map[string]bool{}
		for _, p := range got {
			if seen[p] || !found[p] {
				t.Errorf("the pages hold %s twice, or a file that is not there", p)
			}
			seen[p] = true
		}
		if len(seen) != len(found) {
			t.Errorf("the pages after the deadline hold %d files, want %d", len(seen), len(found))
		}
	}
}
