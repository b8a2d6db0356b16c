package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampledDocs are the documents whose Go snippets must come from Example
// functions, so that go test compiles and runs what they show.
var exampledDocs = []string{"README.md", "docs/go-api.md"}

// TestDocsGoSnippetsAreExamples holds every Go snippet of exampledDocs to
// an example_test.go file: the snippet's lines, without their indentation,
// appear in that file in the same order (the file may have lines between
// them, such as the line that opens the Example function).
func TestDocsGoSnippetsAreExamples(t *testing.T) {
	examples, err := filepath.Glob("*/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var files [][]string
	for _, f := range examples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, codeLines(string(b)))
	}
	for _, doc := range exampledDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		snippets := goSnippet.FindAllStringSubmatch(string(b), -1)
		if len(snippets) == 0 {
			t.Errorf("%s has no Go snippet", doc)
		}
		for i, m := range snippets {
			lines := codeLines(m[1])
			found := false
			for _, f := range files {
				found = found || inOrder(lines, f)
			}
			if !found {
				t.Errorf("%s: Go snippet %d is in no example_test.go; make it part of an Example function:\n%s", doc, i+1, m[1])
			}
		}
	}
}

// goSnippet matches a fenced Go block of a Markdown document.
var goSnippet = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// codeLines returns the lines of src that are not blank, without the white
// space around them.
func codeLines(src string) []string {
	var out []string
	for l := range strings.Lines(src) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// inOrder reports whether every line of want appears in have, in order.
func inOrder(want, have []string) bool {
	i := 0
	for _, l := range have {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	return i == len(want)
}
