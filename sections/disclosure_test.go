package sections_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// closedTree is a tree whose first section is closed, with a child, and
// whose second is open.
func closedTree(t *testing.T) *sections.Tree {
	t.Helper()
	tree, err := sections.NewTree(
		&sections.Section{
			Key: "files", Title: "Files", Closed: true,
			Guidance: "Files live here.\nRead before writing.\n\nThe rest of the story.",
			Tools:    []*tools.Tool{tool("read_file")},
			Children: []*sections.Section{{Key: "search", Title: "Search", Guidance: "Search first.", Tools: []*tools.Tool{tool("grep")}}},
		},
		&sections.Section{Key: "notes", Title: "Notes", Guidance: "Take notes.", Tools: []*tools.Tool{tool("note")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestClosedSectionGuidance: the instructions open with the section of
// open_section, and give a closed section's first paragraph and how to
// open it, without the rest of its guidance or its children; its own
// guidance (its prompt, open_section's result) is whole.
func TestClosedSectionGuidance(t *testing.T) {
	tree := closedTree(t)
	g := tree.Guidance()
	for _, want := range []string{
		"## 1. Closed sections\n\nSome of the sections below are closed",
		"## 2. Files\n\nFiles live here.\nRead before writing.\n\nThis section is closed: its tools are not listed. Call `open_section` with `{\"section\": \"files\"}` to list them and read the rest of it.\n\n## 3. Notes",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("the instructions lack %q:\n%s", want, g)
		}
	}
	if strings.Contains(g, "The rest of the story") || strings.Contains(g, "Search first") {
		t.Errorf("the instructions show more than the summary:\n%s", g)
	}
	var files *sections.Section
	for _, s := range tree.Roots() {
		if s.Key == "files" {
			files = s
		}
	}
	if full := tree.SectionGuidance(files); !strings.Contains(full, "The rest of the story") || !strings.Contains(full, "Search first") {
		t.Errorf("the section's own guidance:\n%s", full)
	}
	if got, want := names(tree.Tools()), []string{"open_section", "read_file", "grep", "note"}; !slices.Equal(got, want) {
		t.Errorf("Tools() = %v, want %v", got, want)
	}
}

// TestHides: a closed section hides its tools and its children's from a
// session until the session opens it; the tools of open sections, and
// open_section, are never hidden; opening twice keeps one key.
func TestHides(t *testing.T) {
	tree := closedTree(t)
	r := session.NewRegistry()
	sections.Persist(r)
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	hidden := func() []string {
		var out []string
		for _, tl := range tree.Tools() {
			if sec := tree.Hides(tl, s); sec != nil {
				out = append(out, tl.Name()+"@"+sec.Key)
			}
		}
		return out
	}
	if got, want := hidden(), []string{"read_file@files", "grep@files"}; !slices.Equal(got, want) {
		t.Errorf("hidden = %v, want %v", got, want)
	}
	if tree.Hides(tree.Tools()[1], nil) == nil {
		t.Error("a nil session sees a closed section's tool")
	}
	for range 2 {
		if err := s.Dispatch(sections.SectionOpened{Key: "files"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := hidden(); len(got) != 0 {
		t.Errorf("hidden once open = %v", got)
	}
	b, err := s.MarshalSlice("sections.opened", s.Slices()["sections.opened"])
	if err != nil || string(b) != `["files"]` {
		t.Errorf("stored as %s, %v", b, err)
	}
}

// TestNoClosedSection: a tree without a closed section has no open_section.
func TestNoClosedSection(t *testing.T) {
	tree, err := sections.NewTree(&sections.Section{Key: "notes", Title: "Notes", Tools: []*tools.Tool{tool("note")}},
		&sections.Section{Key: "off", Title: "Off", Closed: true, Enabled: off, Tools: []*tools.Tool{tool("gone")}})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Opener() != nil || strings.Contains(tree.Guidance(), "Closed sections") {
		t.Errorf("open_section without an enabled closed section:\n%s", tree.Guidance())
	}
}

// TestOnlyTopLevelSectionsClose: a closed child is a startup error.
func TestOnlyTopLevelSectionsClose(t *testing.T) {
	_, err := sections.NewTree(&sections.Section{Key: "a", Title: "A", Children: []*sections.Section{{Key: "b", Title: "B", Closed: true}}})
	if err == nil || err.Error() != `section "a.b": only a top-level section may be closed` {
		t.Errorf("err = %v", err)
	}
}
