package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// structuredCall calls tool as the harness's client and decodes its
// structured content into v; it returns the text and whether it failed.
func structuredCall(t *testing.T, h *harness, tool string, args map[string]any, v any) (string, bool) {
	t.Helper()
	raw, _ := json.Marshal(args)
	r := h.cs.Call(context.Background(), tool, json.RawMessage(raw), nil)
	if r.IsError {
		return r.Said(), true
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return r.Said(), false
}

// TestReadFilePages: a file over the 64 KiB page is read in pages that
// each stay under it, say truncated and where to go on, and together hold
// the file; a negative offset reads its end.
func TestReadFilePages(t *testing.T) {
	var lines []string
	for i := range 6000 {
		lines = append(lines, fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%90)))
	}
	content := strings.Join(lines, "\n") + "\n"
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"big.txt": content})
		var got []string
		offset, pages := 0, 0
		for {
			var page FileLines
			text, failed := structuredCall(t, h, "read_file", map[string]any{"file_path": "big.txt", "offset": offset}, &page)
			if failed {
				t.Fatal(text)
			}
			pages++
			if len(text) > PageBytes+40*len(page.Lines) || page.Offset != offset || page.TotalLines != len(lines) {
				t.Fatalf("page at %d: %d bytes of text, offset %d, total %d", offset, len(text), page.Offset, page.TotalLines)
			}
			got = append(got, page.Lines...)
			if !page.Truncated {
				if page.NextOffset != 0 {
					t.Errorf("last page names next offset %d", page.NextOffset)
				}
				break
			}
			if page.NextOffset != offset+len(page.Lines) || !strings.Contains(text, fmt.Sprintf("call again with offset %d.", page.NextOffset)) {
				t.Fatalf("next offset %d after %d lines from %d: %s", page.NextOffset, len(page.Lines), offset, text[:120])
			}
			offset = page.NextOffset
		}
		if strings.Join(got, "\n")+"\n" != content || pages < 5 {
			t.Errorf("%d pages do not hold the file", pages)
		}
		for _, tc := range []struct {
			offset, limit, first, n int
			truncated               bool
		}{
			{-10, 2000, 5990, 10, false},
			{-10, 3, 5990, 3, true},
			{-9000, 1, 0, 1, true},
		} {
			var page FileLines
			if text, failed := structuredCall(t, h, "read_file", map[string]any{"file_path": "big.txt", "offset": tc.offset, "limit": tc.limit}, &page); failed {
				t.Fatal(text)
			}
			if page.Offset != tc.first || len(page.Lines) != tc.n || page.Truncated != tc.truncated || page.Lines[0] != lines[tc.first] {
				t.Errorf("offset %d limit %d: from %d, %d lines, truncated %v", tc.offset, tc.limit, page.Offset, len(page.Lines), page.Truncated)
			}
		}
	})
}

// readPages calls tool with args, then again with each next_cursor, until
// a page is not truncated, and returns what page (which decodes one
// result into its items, whether it is truncated and its cursor) found,
// and how many pages it took. Each cursor must be in the page's text, and
// each page's text within PageBytes, give or take a line.
func readPages(t *testing.T, h *harness, tool string, args map[string]any, page func(json.RawMessage) ([]string, bool, string)) ([]string, int) {
	t.Helper()
	var got []string
	cursor, pages := "", 0
	for {
		a := maps.Clone(args)
		if cursor != "" {
			a["cursor"] = cursor
		}
		var raw json.RawMessage
		text, failed := structuredCall(t, h, tool, a, &raw)
		if failed {
			t.Fatal(text)
		}
		pages++
		items, truncated, next := page(raw)
		got = append(got, items...)
		if !truncated {
			return got, pages
		}
		if next == "" || !strings.Contains(text, next) || len(text) > PageBytes+200 {
			t.Fatalf("%s page %d: cursor %q, %d bytes of text", tool, pages, next, len(text))
		}
		cursor = next
	}
}

// TestSearchPages: an ls, grep or glob with more results than a page returns
// them in pages, each with a cursor that the next call takes back, that
// together hold every result once, in order; a bad cursor, or one of
// another search, is a clear error.
func TestSearchPages(t *testing.T) {
	files := map[string]string{}
	var lines, paths []string
	for d := range 3 {
		for f := range 40 {
			p := fmt.Sprintf("d%d/f%02d.txt", d, f)
			var b strings.Builder
			for l := range 50 {
				fmt.Fprintf(&b, "hit %s %d %s\nmiss\n", p, l, strings.Repeat("z", 40))
				lines = append(lines, fmt.Sprintf("%s:%d", p, 2*l+1))
			}
			files[p] = b.String()
			paths = append(paths, p)
		}
	}
	files["d1.txt"] = "hit top\n" // after d1/ in the walk's order
	lines = append(lines[:80*50], append([]string{"d1.txt:1"}, lines[80*50:]...)...)
	paths = append(paths[:80], append([]string{"d1.txt"}, paths[80:]...)...)
	// grepPage reads a page of grep in any output mode: the matching
	// lines (not their context), the files, or the files with their
	// counts; every page has the totals of the whole search.
	grepPage := func(raw json.RawMessage) ([]string, bool, string) {
		var page GrepMatches
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Matches {
			if !m.Context {
				got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
			}
		}
		for _, c := range page.Counts {
			got = append(got, fmt.Sprintf("%s:%d", c.Path, c.Count))
		}
		got = append(got, page.Files...)
		if page.TotalFiles != len(paths) || page.OutputMode != modeFiles && page.TotalMatches != len(lines) {
			t.Errorf("%s totals: %d matches in %d files, want %d in %d", page.OutputMode, page.TotalMatches, page.TotalFiles, len(lines), len(paths))
		}
		return got, page.Truncated, page.NextCursor
	}
	var counts []string
	for _, p := range paths {
		counts = append(counts, fmt.Sprintf("%s:%d", p, strings.Count(files[p], "hit")))
	}
	globPage := func(raw json.RawMessage) ([]string, bool, string) {
		var page GlobMatches
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatal(err)
		}
		if page.Total != len(paths) {
			t.Errorf("total %d, want %d", page.Total, len(paths))
		}
		return page.Files, page.Truncated, page.NextCursor
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: 700}})
		for _, tc := range []struct {
			tool     string
			args     map[string]any
			page     func(json.RawMessage) ([]string, bool, string)
			want     []string
			minPages int
		}{
			{"grep", map[string]any{"pattern": "^hit"}, grepPage, lines, 4},
			{"grep", map[string]any{"pattern": "^hit", "context": 1}, grepPage, lines, 8},
			{"grep", map[string]any{"pattern": "^hit", "after": 1}, grepPage, lines, 8},
			{"grep", map[string]any{"pattern": "^hit", "output_mode": "files_with_matches"}, grepPage, paths, 1},
			{"grep", map[string]any{"pattern": "^hit", "output_mode": "count"}, grepPage, counts, 1},
			{"glob", map[string]any{"pattern": "**/*.txt"}, globPage, paths, 1},
		} {
			got, pages := readPages(t, h, tc.tool, tc.args, tc.page)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || pages < tc.minPages {
				t.Errorf("%s: %d pages, %d results, want %d", tc.tool, pages, len(got), len(tc.want))
			}
		}
		h = newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: 50}})
		if got, pages := readPages(t, h, "glob", map[string]any{"pattern": "**/*.txt"}, globPage); strings.Join(got, " ") != strings.Join(paths, " ") || pages != 3 {
			t.Errorf("glob by 50: %d pages, %d results, want 3 pages of %d", pages, len(got), len(paths))
		}
		for mode, want := range map[string][]string{"files_with_matches": paths, "count": counts} {
			if got, pages := readPages(t, h, "grep", map[string]any{"pattern": "^hit", "output_mode": mode}, grepPage); strings.Join(got, " ") != strings.Join(want, " ") || pages != 3 {
				t.Errorf("grep %s by 50: %d pages, %d results, want 3 pages of %d", mode, pages, len(got), len(want))
			}
		}
		lsPage := func(raw json.RawMessage) ([]string, bool, string) {
			var page Listing
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range page.Entries {
				names = append(names, e.Name)
			}
			return names, page.Truncated, page.NextCursor
		}
		for _, tc := range []struct {
			max   int
			path  string
			want  string
			pages int
		}{
			{7, "d0", strings.Join(slices.Collect(func(yield func(string) bool) {
				for f := range 40 {
					yield(fmt.Sprintf("f%02d.txt", f))
				}
			}), " "), 6},
			{2, "", "d0 d1 d2 d1.txt", 2},
		} {
			h := newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: tc.max}})
			if got, pages := readPages(t, h, "ls", map[string]any{"path": tc.path}, lsPage); strings.Join(got, " ") != tc.want || pages != tc.pages {
				t.Errorf("ls %q by %d: %d pages of %v, want %d of %s", tc.path, tc.max, pages, got, tc.pages, tc.want)
			}
		}
		otherLs := cursor{Tool: "ls", Path: "d0", Pattern: "false", File: "true/f01.txt"}.encode()
		otherGrep := cursor{Tool: "grep", Pattern: "hit", Mode: modeContent, File: "d0/f01.txt", Line: 3}.encode()
		countGrep := cursor{Tool: "grep", Pattern: "^hit", Mode: modeCount, File: "d0/f01.txt"}.encode()
		otherGlob := cursor{Tool: "glob", Pattern: "*", File: "d0/f01.txt"}.encode()
		for _, tc := range []struct{ tool, args, want string }{
			{"grep", `{"pattern":"^hit","cursor":"!!"}`, "Invalid cursor: pass the next_cursor of an earlier call of grep unchanged."},
			{"grep", `{"pattern":"^hit","cursor":"e30"}`, "Invalid cursor: pass the next_cursor of an earlier call of grep unchanged."},
			{"grep", `{"pattern":"^hit","cursor":"` + otherGrep + `"}`, "Invalid cursor: it belongs to a call of grep with other arguments; pass the same pattern, path, glob, type, case_insensitive and multiline with it."},
			{"grep", `{"pattern":"^hit","cursor":"` + countGrep + `"}`, "Invalid cursor: it is the next_cursor of grep with output_mode count, not content; pass the same output_mode with it."},
			{"grep", `{"pattern":"^hit","case_insensitive":true,"output_mode":"count","cursor":"` + countGrep + `"}`, "Invalid cursor: it belongs to a call of grep with other arguments; pass the same pattern, path, glob, type, case_insensitive and multiline with it."},
			{"grep", `{"pattern":"x","cursor":"` + otherGlob + `"}`, "Invalid cursor: it is the next_cursor of glob, not of grep."},
			{"ls", `{"path":"d1","cursor":"` + otherLs + `"}`, "Invalid cursor: it belongs to a call of ls with other arguments; pass the same path and all with it."},
			{"ls", `{"path":"d0","all":true,"cursor":"` + otherLs + `"}`, "Invalid cursor: it belongs to a call of ls with other arguments; pass the same path and all with it."},
			{"glob", `{"pattern":"*","cursor":"e30"}`, "Invalid cursor: pass the next_cursor of an earlier call of glob unchanged."},
			{"glob", `{"pattern":"**","cursor":"` + otherGlob + `"}`, "Invalid cursor: it belongs to a call of glob with other arguments; pass the same pattern and path with it."},
		} {
			step{tc.tool, tc.args, tc.want, true}.check(t, h)
		}
	})
}

func TestPathLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a/b", "a.txt", true},
		{"a.txt", "a/b", false},
		{"a", "a/b", true},
		{"a/b", "a/b", false},
		{"b", "a/z", false},
	} {
		if got := pathLess(tc.a, tc.b); got != tc.want {
			t.Errorf("pathLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
