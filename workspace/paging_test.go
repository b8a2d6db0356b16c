package workspace

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestGrepPages: a search with more matches than a page returns them in
// pages, each with a cursor that the next call takes back, that together
// hold every match once, in order; a bad cursor is a clear error.
func TestGrepPages(t *testing.T) {
	files := map[string]string{}
	var want []string
	for d := range 3 {
		for f := range 40 {
			p := fmt.Sprintf("d%d/f%02d.txt", d, f)
			var b strings.Builder
			for l := range 50 {
				fmt.Fprintf(&b, "hit %s %d %s\nmiss\n", p, l, strings.Repeat("z", 40))
				want = append(want, fmt.Sprintf("%s:%d", p, 2*l+1))
			}
			files[p] = b.String()
		}
	}
	files["d1.txt"] = "hit top\n" // after d1/ in the walk's order
	want = append(want[:80*50], append([]string{"d1.txt:1"}, want[80*50:]...)...)
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files, harnessOpts{opts: Options{MaxMatches: 700}})
		var got []string
		cursor, pages := "", 0
		for {
			var page GrepMatches
			args := map[string]any{"pattern": "^hit"}
			if cursor != "" {
				args["cursor"] = cursor
			}
			text, failed := structuredCall(t, h, "grep", args, &page)
			if failed {
				t.Fatal(text)
			}
			pages++
			for _, m := range page.Matches {
				got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
			}
			if !page.Truncated {
				break
			}
			if page.NextCursor == "" || !strings.Contains(text, page.NextCursor) || len(text) > PageBytes+200 {
				t.Fatalf("page %d: cursor %q, %d bytes of text", pages, page.NextCursor, len(text))
			}
			cursor = page.NextCursor
		}
		if strings.Join(got, " ") != strings.Join(want, " ") || pages < 4 {
			t.Errorf("%d pages, %d matches, want %d", pages, len(got), len(want))
		}
		other := encodeCursor(GrepParams{Pattern: "hit"}, "d0/f01.txt", 3)
		for _, tc := range []struct{ cursor, want string }{
			{"!!", "Invalid cursor: pass the next_cursor of an earlier grep unchanged."},
			{"e30", "Invalid cursor: pass the next_cursor of an earlier grep unchanged."},
			{other, "Invalid cursor: it belongs to a grep with another pattern, path or glob; pass the same ones with it."},
		} {
			step{"grep", fmt.Sprintf(`{"pattern":"^hit","cursor":%q}`, tc.cursor), tc.want, true}.check(t, h)
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
