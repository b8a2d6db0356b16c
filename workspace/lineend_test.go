package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestLineEndsOf: a text's line ends are CRLF only when every one is.
func TestLineEndsOf(t *testing.T) {
	cases := []struct {
		text string
		want lineEnds
	}{
		{"", endsLF},
		{"one line", endsLF},
		{"a\nb\n", endsLF},
		{"a\r\nb\r\n", endsCRLF},
		{"a\r\nb", endsCRLF},
		{"\r\n", endsCRLF},
		{"a\r\nb\n", endsMixed},
		{"a\nb\r\n", endsMixed},
		{"a\rb\r", endsLF}, // a lone "\r" ends no line
	}
	for _, c := range cases {
		if got := lineEndsOf(c.text); got != c.want {
			t.Errorf("lineEndsOf(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

// TestToCRLF: each "\n" becomes "\r\n", once.
func TestToCRLF(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\n", "\r\n"},
		{"a\nb\n", "a\r\nb\r\n"},
		{"a\r\nb\n", "a\r\nb\r\n"},
		{"\n\n", "\r\n\r\n"},
		{"a\rb\n", "a\rb\r\n"},
	}
	for _, c := range cases {
		if got := toCRLF(c.in); got != c.want {
			t.Errorf("toCRLF(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestReplacement: old and new written with "\n" replace in a CRLF text,
// which keeps "\r\n" everywhere; other texts are matched as written; a BOM
// stays.
func TestReplacement(t *testing.T) {
	cases := []struct {
		name, text, old, new string
		all                  bool
		want                 string // "" when old is not found
	}{
		{"CRLF, lines written with \\n", "a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\nz\n", false, "x\r\ny\r\nz\r\nc\r\n"},
		{"CRLF, old as the file has it", "a\r\nb\r\nc\r\n", "a\r\nb", "x\ny", false, "x\r\ny\r\nc\r\n"},
		{"CRLF, one line, new lines added", "a\r\nb\r\n", "b", "b\nc", false, "a\r\nb\r\nc\r\n"},
		{"CRLF, a line end removed", "a\r\nb\r\n", "\nb", "b", false, "ab\r\n"},
		{"CRLF, no final line end", "a\r\nb", "a\nb", "c\nd", false, "c\r\nd"},
		{"CRLF, old ends in the line end's \\r", "a\r\nb\r\n", "a\r", "x", false, "x\r\nb\r\n"},
		{"CRLF, new ends in \\r, old does not", "a\r\nb\r\n", "a", "x\r", false, "x\r\nb\r\n"},
		{"CRLF, a line's text removed, its end kept", "a\r\nb\r\n", "a\r", "", false, "\r\nb\r\n"},
		{"CRLF, replace all", "x\r\ny\r\nx\r\ny\r\n", "x\ny", "z", true, "z\r\nz\r\n"},
		{"LF untouched", "a\nb\n", "a\nb", "x\r\ny", false, "x\r\ny\n"},
		{"mixed: matched as written", "a\r\nb\nc\r\n", "b\nc\r\n", "B\nC\r\n", false, "a\r\nB\nC\r\n"},
		{"mixed: \\n is not \\r\\n", "a\r\nb\nc\r\n", "a\nb", "x", false, ""},
		{"BOM kept when old starts the file", "\uFEFFa\r\nb\r\n", "\uFEFFa\nb", "x\ny", false, "\uFEFFx\r\ny\r\n"},
		{"BOM not doubled", "\uFEFFa\r\nb\r\n", "a", "\uFEFFx", false, "\uFEFFx\r\nb\r\n"},
		{"BOM, old after it", "\uFEFFa\nb\n", "a\nb", "c", false, "\uFEFFc\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := replacementIn(c.text, c.old, c.new)
			n := strings.Count(c.text, r.old)
			if c.want == "" {
				if n != 0 {
					t.Fatalf("old %q found %d times in %q", r.old, n, c.text)
				}
				return
			}
			if n == 0 || n > 1 && !c.all {
				t.Fatalf("old %q found %d times in %q", r.old, n, c.text)
			}
			if got := r.apply(c.text, n); got != c.want {
				t.Errorf("apply = %q, want %q", got, c.want)
			}
		})
	}
}

// fileBytes returns the bytes of the workspace file path as the harness's
// session sees them, and on disk the bytes of the file itself.
func (h *harness) fileBytes(path string) string {
	h.t.Helper()
	if h.dir != "" {
		data, err := os.ReadFile(filepath.Join(h.dir, filepath.FromSlash(path)))
		if err != nil {
			h.t.Fatal(err)
		}
		return string(data)
	}
	data, err := From(h.session(h.cs)).ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(data)
}

// TestEditCRLF: edit_file and apply_edits edit a file whose lines end in
// "\r\n" with strings written with "\n", on both backends; the file keeps
// its line ends and its BOM, a file of mixed ends is matched as written,
// and a real difference still gets the near-miss message.
func TestEditCRLF(t *testing.T) {
	const (
		crlf  = "package main\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n}\r\n"
		mixed = "one\r\ntwo\nthree\r\n"
	)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	edit := func(old, new string, all bool) string {
		return fmt.Sprintf(`{"file_path":"f.go","old_string":%s,"new_string":%s,"replace_all":%v}`, q(old), q(new), all)
	}
	op := func(old, new string) string {
		return fmt.Sprintf(`{"op":"edit","file_path":"f.go","old_string":%s,"new_string":%s}`, q(old), q(new))
	}
	cases := []struct {
		name, file, tool, args string
		wantText               string
		wantErr                bool
		wantFile               string
	}{
		{"edit_file, lines with \\n", crlf, "edit_file",
			edit("func main() {\n\tprintln(\"hi\")\n}", "func main() {\n\tprintln(\"hi\")\n\tprintln(\"bye\")\n}", false),
			"Replaced 1 occurrence in f.go.", false,
			"package main\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n\tprintln(\"bye\")\r\n}\r\n"},
		{"edit_file, one line into two", crlf, "edit_file", edit("package main", "// Package main.\npackage main", false),
			"Replaced 1 occurrence in f.go.", false,
			"// Package main.\r\npackage main\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n}\r\n"},
		{"edit_file, replace_all", "a\r\nb\r\na\r\nb\r\n", "edit_file", edit("a\nb\n", "c\n", true),
			"Replaced 2 occurrences in f.go.", false, "c\r\nc\r\n"},
		{"edit_file, several without replace_all", "a\r\nb\r\na\r\nb\r\n", "edit_file", edit("a\nb", "c", false),
			"old_string matches 2 times in f.go; add context or set replace_all.", true, "a\r\nb\r\na\r\nb\r\n"},
		{"edit_file, BOM kept", "\uFEFFpackage main\r\n\r\nfunc f() {}\r\n", "edit_file", edit("\uFEFFpackage main\n", "package app\n", false),
			"Replaced 1 occurrence in f.go.", false, "\uFEFFpackage app\r\n\r\nfunc f() {}\r\n"},
		{"edit_file, mixed ends matched as written", mixed, "edit_file", edit("two\nthree\r\n", "2\n3\r\n", false),
			"Replaced 1 occurrence in f.go.", false, "one\r\n2\n3\r\n"},
		{"edit_file, mixed ends: \\n is not \\r\\n", mixed, "edit_file", edit("one\ntwo", "x", false),
			"old_string not found in f.go. Lines 1-2 match it except for whitespace (trailing whitespace); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,2 +1,2 @@\n-one\n+one␍\n two\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)" +
				` The file mixes "\r\n" and "\n" line ends, so old_string is matched as written: end each of its lines as that line ends in the file.`,
			true, mixed},
		{"edit_file, a real difference", crlf, "edit_file", edit("func main() {\n  println(\"hi\")\n}", "x", false),
			"old_string not found in f.go. Lines 3-5 match it except for whitespace (indentation); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,3 +3,3 @@\n func main() {\n-  println(\"hi\")\n+→println(\"hi\")\n }\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)",
			true, crlf},
		{"apply_edits, two edits of one file", crlf, "apply_edits",
			`{"edits":[` + op("package main\n\n", "package main\n\nimport \"os\"\n\n") + "," + op("println(\"hi\")\n}", "println(\"hi\")\n\tos.Exit(0)\n}") + `]}`,
			"Applied 2 edits to 1 file.\n\nedits[0]: Replaced 1 occurrence in f.go.\nedits[1]: Replaced 1 occurrence in f.go.", false,
			"package main\r\n\r\nimport \"os\"\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n\tos.Exit(0)\r\n}\r\n"},
		{"apply_edits, the second edit fails", crlf, "apply_edits",
			`{"edits":[` + op("package main\n", "package app\n") + "," + op("nothing\nlike\nthis", "x") + `]}`,
			"edits[1] (edit f.go) failed: old_string not found in f.go. No edit was applied.", true, crlf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, bk backendKind) {
				h := newHarness(t, bk, map[string]string{"f.go": c.file})
				h.mustCall("read_file", `{"file_path":"f.go"}`)
				step{c.tool, c.args, c.wantText, c.wantErr}.check(t, h)
				if got := h.fileBytes("f.go"); got != c.wantFile {
					t.Errorf("f.go holds\n%q\nwant\n%q", got, c.wantFile)
				}
			})
		})
	}
}

// TestEditCRLFDryRun: a dry run of an edit of a CRLF file succeeds, shows
// the change, and leaves the file as it was.
func TestEditCRLFDryRun(t *testing.T) {
	const crlf = "a\r\nb\r\nc\r\n"
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"f.txt": crlf})
		h.mustCall("read_file", `{"file_path":"f.txt"}`)
		for _, tool := range []string{"edit_file", "apply_edits"} {
			args := `{"file_path":"f.txt","old_string":"a\nb","new_string":"x\ny"}`
			if tool == "apply_edits" {
				args = `{"edits":[{"op":"edit","file_path":"f.txt","old_string":"a\nb","new_string":"x\ny"}]}`
			}
			r := h.cs.Call(context.Background(), tool, json.RawMessage(args), map[string]any{tools.MetaDryRun: true})
			if r.IsError || !strings.HasPrefix(r.Said(), "Dry run: nothing was changed.") || !strings.Contains(r.Said(), "f.txt") {
				t.Errorf("%s dry run = (isError=%v) %s", tool, r.IsError, r.Said())
			}
			if got := h.fileBytes("f.txt"); got != crlf {
				t.Errorf("%s dry run changed f.txt to %q", tool, got)
			}
		}
	})
}
