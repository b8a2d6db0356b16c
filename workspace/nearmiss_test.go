package workspace

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const goFile = "package main\n\nfunc main() {\n\tif x  == 1 {\n\t\treturn\n\t}\n}\n"

// TestNearMiss: what nearMiss says for an old string that is not in the
// text: where the closest match is and what differs.
func TestNearMiss(t *testing.T) {
	cases := []struct {
		name, text, old, want string
	}{
		{"indentation", goFile, "    if x  == 1 {\n        return\n    }",
			" Lines 4-6 match it except for whitespace (indentation); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,3 +4,3 @@\n-    if x  == 1 {\n+→if x  == 1 {\n-        return\n+→→return\n-    }\n+→}\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)"},
		{"spacing inside a line, part of it", goFile, "if x == 1 {",
			" Line 4 matches it except for whitespace (spacing inside lines); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,1 +4,1 @@\n-if x == 1 {\n+→if x  == 1 {\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)"},
		{"trailing whitespace", "a\nb  \nc\n", "a\nb\nc",
			" Lines 1-3 match it except for whitespace (trailing whitespace); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,3 +1,3 @@\n a\n-b\n+b··\n c\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)"},
		{"one line differs", goFile, "func main() {\n\tif y  == 1 {\n\t\treturn\n\t}",
			" The closest match is at lines 3-6; it differs as shown:\n" +
				"--- old_string\n+++ f.go\n@@ -1,4 +3,4 @@\n func main() {\n-→if y  == 1 {\n+→if x  == 1 {\n \t\treturn\n \t}\n" +
				"(→ is a tab, · a space at the end of a line, ␍ a carriage return)"},
		{"the first of equal matches", "x\n y\nx\n y\n", "x\ny",
			" Lines 1-2 match it except for whitespace (indentation); copy old_string from the file as it is:\n" +
				"--- old_string\n+++ f.go\n@@ -1,2 +1,2 @@\n x\n-y\n+ y"},
		{"nothing close", goFile, "something else\nentirely\nhere", ""},
		{"longer than the file", "a\n", "a\nb\nc", ""},
		{"half the lines are not enough", "a\nb\nc\nd\n", "a\nx\ny\nz", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nearMiss(c.text, c.old, "f.go"); got != c.want {
				t.Errorf("nearMiss:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestNearMissIsBounded: a large file with many lines like old's stays
// fast: windows are anchored on lines that match whole.
func TestNearMissIsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "\tline %d\n}\n", i%1000)
	}
	old := "  line 7\n}\n  line 8\n}\n  line 9\n}\n  line 10\n}\n"
	start := time.Now()
	got := nearMiss(b.String(), old, "big.go")
	if !strings.HasPrefix(got, " Lines 15-22 match it except for whitespace (indentation)") {
		t.Errorf("nearMiss = %.200q", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("nearMiss took %v on 400,000 lines", d)
	}
}

// TestEditNearMiss: edit_file and apply_edits both say what differs.
func TestEditNearMiss(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"main.go": goFile})
		h.mustCall("read_file", `{"file_path":"main.go"}`)
		want := "old_string not found in main.go. Line 5 matches it except for whitespace (indentation); copy old_string from the file as it is:\n" +
			"--- old_string\n+++ main.go\n@@ -1,1 +5,1 @@\n-    return\n+→→return\n(→ is a tab, · a space at the end of a line, ␍ a carriage return)"
		step{"edit_file", `{"file_path":"main.go","old_string":"    return","new_string":"x"}`, want, true}.check(t, h)
		step{"apply_edits", `{"edits":[{"op":"edit","file_path":"main.go","old_string":"    return","new_string":"x"}]}`,
			"edits[0] (edit main.go) failed: " + want + " No edit was applied.", true}.check(t, h)
	})
}
