package sections_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
)

var update = flag.Bool("update", false, "rewrite golden files")

type params struct {
	Path string `json:"path" jsonschema:"The path."`
}

func tool(name string, ex ...tools.Example) *tools.Tool {
	return tools.New(name, "Does "+name+".", tools.Annotations{Title: name},
		func(*tools.Context, params) (tools.Result[any], error) { return tools.OK[any]("ok", nil), nil },
		tools.WithExamples(ex...))
}

func off() bool { return false }
func on() bool  { return true }

func names(ts []*tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func keys(ss []*sections.Section) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Key)
	}
	return out
}

// sampleTree is a small tree with children, a disabled child (with an
// enabled grandchild that must not show), a disabled root, a section
// without guidance and tools with examples.
func sampleTree() []*sections.Section {
	return []*sections.Section{
		{
			Key:      "workspace",
			Title:    "Workspace",
			Guidance: "Files live under {{.Root}}.\nRead a file before you change it.\n",
			Data:     struct{ Root string }{"/work"},
			Tools: []*tools.Tool{
				tool("read_file", tools.Example{
					Description: "Read the README.",
					Input:       `{"path":"README.md"}`,
					Output:      "# Title\n\nBody text.",
				}),
				tool("write_file", tools.Example{
					Description: "Create a file.",
					Input:       `{"path":"notes.txt"}`,
				}),
			},
			Children: []*sections.Section{
				{
					Key:      "search",
					Title:    "Searching",
					Guidance: "Search before you read everything.",
					Enabled:  on,
					Tools:    []*tools.Tool{tool("grep")},
					Children: []*sections.Section{
						{Key: "regex", Title: "Regular expressions", Guidance: "Use RE2 syntax.", Tools: []*tools.Tool{tool("grep_regex")}},
					},
				},
				{
					Key:      "shell",
					Title:    "Shell",
					Guidance: "Never shown.",
					Enabled:  off,
					Tools:    []*tools.Tool{tool("run")},
					Children: []*sections.Section{
						{Key: "inner", Title: "Inside a disabled section", Guidance: "Never shown either.", Tools: []*tools.Tool{tool("run_inner")}},
					},
				},
				{Key: "tips", Title: "Tips"},
			},
		},
		{
			Key:      "experimental",
			Title:    "Experimental",
			Guidance: "Not offered.",
			Enabled:  off,
			Tools:    []*tools.Tool{tool("experiment")},
		},
		{
			Key:      "planning",
			Title:    "Planning",
			Guidance: "Keep a plan.",
			Tools: []*tools.Tool{tool("plan_read", tools.Example{
				Description: "Read the plan.",
				Input:       `{"path":"plan"}`,
				Output:      "line one\n\nline three",
			})},
		},
	}
}

func newTree(t *testing.T, roots ...*sections.Section) *sections.Tree {
	t.Helper()
	tree, err := sections.NewTree(roots...)
	if err != nil {
		t.Fatalf("NewTree: %v", err)
	}
	return tree
}

func TestToolOrder(t *testing.T) {
	roots := sampleTree()
	tree := newTree(t, roots...)
	want := []string{"read_file", "write_file", "grep", "grep_regex", "plan_read"}
	if got := names(tree.Tools()); !slices.Equal(got, want) {
		t.Errorf("Tools() = %q, want %q", got, want)
	}
	if got, want := keys(tree.Sections()), []string{"workspace", "search", "regex", "tips", "planning"}; !slices.Equal(got, want) {
		t.Errorf("Sections() = %q, want %q", got, want)
	}
	if got, want := keys(tree.All()), []string{"workspace", "search", "regex", "shell", "inner", "tips", "experimental", "planning"}; !slices.Equal(got, want) {
		t.Errorf("All() = %q, want %q", got, want)
	}
	if got, want := keys(tree.Roots()), []string{"workspace", "planning"}; !slices.Equal(got, want) {
		t.Errorf("Roots() = %q, want %q", got, want)
	}
	// Every tool, enabled or not, knows its section.
	for _, s := range tree.All() {
		for _, tl := range s.Tools {
			if got := tree.Owner(tl); got != s {
				t.Errorf("Owner(%s) = %v, want section %s", tl.Name(), got, s.Key)
			}
		}
	}
	if tree.Owner(tool("stranger")) != nil {
		t.Error("Owner of a tool outside the tree is not nil")
	}
}

func TestToolOrderTable(t *testing.T) {
	tests := []struct {
		name  string
		roots []*sections.Section
		want  []string
	}{
		{"empty tree", nil, nil},
		{"declaration order within a section", []*sections.Section{
			{Key: "a", Tools: []*tools.Tool{tool("z"), tool("y"), tool("x")}},
		}, []string{"z", "y", "x"}},
		{"parent's tools before its children's", []*sections.Section{
			{Key: "a", Tools: []*tools.Tool{tool("a1")}, Children: []*sections.Section{
				{Key: "b", Tools: []*tools.Tool{tool("b1")}, Children: []*sections.Section{
					{Key: "c", Tools: []*tools.Tool{tool("c1")}},
				}},
				{Key: "d", Tools: []*tools.Tool{tool("d1")}},
			}},
			{Key: "e", Tools: []*tools.Tool{tool("e1")}},
		}, []string{"a1", "b1", "c1", "d1", "e1"}},
		{"a disabled root contributes nothing, nor do its children", []*sections.Section{
			{Key: "a", Enabled: off, Tools: []*tools.Tool{tool("a1")}, Children: []*sections.Section{
				{Key: "b", Enabled: on, Tools: []*tools.Tool{tool("b1")}},
			}},
			{Key: "c", Tools: []*tools.Tool{tool("c1")}},
		}, []string{"c1"}},
		{"a disabled child skips its subtree only", []*sections.Section{
			{Key: "a", Tools: []*tools.Tool{tool("a1")}, Children: []*sections.Section{
				{Key: "b", Enabled: off, Tools: []*tools.Tool{tool("b1")}, Children: []*sections.Section{
					{Key: "c", Tools: []*tools.Tool{tool("c1")}},
				}},
				{Key: "d", Tools: []*tools.Tool{tool("d1")}},
			}},
		}, []string{"a1", "d1"}},
		{"everything disabled", []*sections.Section{
			{Key: "a", Enabled: off, Tools: []*tools.Tool{tool("a1")}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := newTree(t, tt.roots...)
			if got := names(tree.Tools()); !slices.Equal(got, tt.want) {
				t.Errorf("Tools() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewTreeErrors(t *testing.T) {
	tests := []struct {
		name  string
		roots []*sections.Section
		want  []string // each must appear in the error
	}{
		{"uppercase key", []*sections.Section{{Key: "Files"}}, []string{`section "Files": key must match`}},
		{"empty key", []*sections.Section{{Key: ""}}, []string{`section "": key must match`}},
		{"key starting with a dash", []*sections.Section{{Key: "-x"}}, []string{`section "-x": key must match`}},
		{"key with a space", []*sections.Section{{Key: "a b"}}, []string{`section "a b": key must match`}},
		{"65-char key", []*sections.Section{{Key: strings.Repeat("k", 65)}}, []string{`key must match`}},
		{"bad child key names its path", []*sections.Section{
			{Key: "a", Children: []*sections.Section{{Key: "B"}}},
		}, []string{`section "a.B": key must match`}},
		{"key used twice", []*sections.Section{{Key: "a"}, {Key: "a"}}, []string{`section "a": key used twice`}},
		{"duplicate tool across sections", []*sections.Section{
			{Key: "first", Tools: []*tools.Tool{tool("dup")}},
			{Key: "second", Tools: []*tools.Tool{tool("dup")}},
		}, []string{`tool "dup" is declared by both section "first" and section "second"`}},
		{"duplicate tool in a disabled section", []*sections.Section{
			{Key: "first", Tools: []*tools.Tool{tool("dup")}},
			{Key: "second", Enabled: off, Tools: []*tools.Tool{tool("dup")}},
		}, []string{`tool "dup" is declared by both section "first" and section "second"`}},
		{"duplicate tool under a disabled parent", []*sections.Section{
			{Key: "a", Enabled: off, Children: []*sections.Section{{Key: "b", Tools: []*tools.Tool{tool("dup")}}}},
			{Key: "c", Tools: []*tools.Tool{tool("dup")}},
		}, []string{`tool "dup" is declared by both section "a.b" and section "c"`}},
		{"duplicate tool in sections with the same key under different parents", []*sections.Section{
			{Key: "a", Children: []*sections.Section{{Key: "x", Tools: []*tools.Tool{tool("dup")}}}},
			{Key: "b", Children: []*sections.Section{{Key: "x", Tools: []*tools.Tool{tool("dup")}}}},
		}, []string{`tool "dup" is declared by both section "a.x" and section "b.x"`}},
		{"duplicate tool within one section", []*sections.Section{
			{Key: "a", Tools: []*tools.Tool{tool("dup"), tool("dup")}},
		}, []string{`tool "dup" is declared by both section "a" and section "a"`}},
		{"bad tool names section and tool", []*sections.Section{
			{Key: "a", Children: []*sections.Section{{Key: "b", Tools: []*tools.Tool{tool("Bad Tool")}}}},
		}, []string{`section "a.b", tool "Bad Tool": name "Bad Tool" must match`}},
		{"bad tool in a disabled section", []*sections.Section{
			{Key: "a", Enabled: off, Tools: []*tools.Tool{tools.New("ok", "", tools.Annotations{Title: "T"},
				func(*tools.Context, params) (tools.Result[any], error) { return tools.Result[any]{}, nil })}},
		}, []string{`section "a", tool "ok": description must be 1 to 200 characters`}},
		{"tool with a bad example", []*sections.Section{
			{Key: "a", Tools: []*tools.Tool{tool("ex", tools.Example{Description: "Bad.", Input: `{"path": 1}`})}},
		}, []string{`section "a", tool "ex": example 1 input: /path: expected string, got number`}},
		{"template that does not parse", []*sections.Section{
			{Key: "a", Guidance: "Hello {{.Name"},
		}, []string{`section "a": guidance:`}},
		{"template with a missing field", []*sections.Section{
			{Key: "a", Guidance: "Hello {{.Name}}", Data: struct{ Other string }{}},
		}, []string{`section "a": guidance:`, "Name"}},
		{"template with a missing map key", []*sections.Section{
			{Key: "a", Children: []*sections.Section{{Key: "b", Guidance: "Hello {{.name}}", Data: map[string]string{"other": "x"}}}},
		}, []string{`section "a.b": guidance:`, "name"}},
		{"every problem is reported", []*sections.Section{
			{Key: "A", Guidance: "{{", Tools: []*tools.Tool{tool("dup"), tool("BAD")}},
			{Key: "b", Tools: []*tools.Tool{tool("dup")}},
		}, []string{`section "A": key must match`, `section "A", tool "BAD"`, `tool "dup" is declared by both`, `section "A": guidance:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := sections.NewTree(tt.roots...)
			if err == nil {
				t.Fatalf("NewTree = %v, nil; want an error", tree)
			}
			if tree != nil {
				t.Errorf("NewTree returned a tree with the error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidKeys(t *testing.T) {
	for _, k := range []string{"a", "0", "a.b", "a_b-c", "x1.y2", strings.Repeat("k", 64)} {
		if _, err := sections.NewTree(&sections.Section{Key: k}); err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("%s differs from %s (run with -update to accept):\n got:\n%s\nwant:\n%s", name, path, got, want)
	}
}

func TestGuidanceGolden(t *testing.T) {
	roots := sampleTree()
	tree := newTree(t, roots...)
	tests := []struct {
		name string
		got  string
	}{
		{"guidance", tree.Guidance()},
		{"section_workspace", tree.SectionGuidance(roots[0])},
		{"section_planning", tree.SectionGuidance(roots[2])},
		{"section_search", tree.SectionGuidance(roots[0].Children[0])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, tt.got)
		})
	}
}

func TestGuidanceLeavesOutDisabledSections(t *testing.T) {
	g := newTree(t, sampleTree()...).Guidance()
	for _, hidden := range []string{"Shell", "Never shown", "run_inner", "Experimental", "Not offered", "`run`"} {
		if strings.Contains(g, hidden) {
			t.Errorf("guidance contains %q from a disabled section", hidden)
		}
	}
	for _, shown := range []string{"## 1. Workspace", "### 1.1. Searching", "#### 1.1.1. Regular expressions", "### 1.2. Tips", "## 2. Planning", "Files live under /work."} {
		if !strings.Contains(g, shown) {
			t.Errorf("guidance lacks %q", shown)
		}
	}
}

func TestGuidanceEmptyTree(t *testing.T) {
	if g := newTree(t).Guidance(); g != "" {
		t.Errorf("Guidance of an empty tree = %q", g)
	}
	if g := newTree(t, &sections.Section{Key: "a", Title: "A", Enabled: off}).Guidance(); g != "" {
		t.Errorf("Guidance of a disabled tree = %q", g)
	}
}

// TestDuplicateToolNamesBothSectionPaths pins a bug: the duplicate-tool
// error named sections by key alone, so two sections with the same key
// under different parents were reported as section "x" and section "x".
func TestDuplicateToolNamesBothSectionPaths(t *testing.T) {
	_, err := sections.NewTree(
		&sections.Section{Key: "a", Children: []*sections.Section{{Key: "x", Tools: []*tools.Tool{tool("dup")}}}},
		&sections.Section{Key: "b", Children: []*sections.Section{{Key: "x", Tools: []*tools.Tool{tool("dup")}}}},
	)
	const want = `tool "dup" is declared by both section "a.x" and section "b.x"`
	if err == nil || err.Error() != want {
		t.Errorf("NewTree error = %v, want %s", err, want)
	}
}
