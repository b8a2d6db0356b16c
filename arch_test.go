package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/wink-mcp/wink-mcp/"

// allowedImports lists, for each package, the project packages its non-test
// code may import. Imports point one way, down the list in DESIGN.md: server
// never imports a concrete section, and a concrete section never imports
// server or a transport.
var allowedImports = map[string][]string{
	"session":     {},
	"diffs":       {},
	"schema":      {},
	"config":      {"hooks", "planning", "consent", "evaluation"},
	"identity":    {},
	"blobname":    {},
	"store":       {"blobname"},
	"formats":     {"store"},
	"merkle":      {},
	"gitignore":   {},
	"statetree":   {"session", "merkle", "blobname"},
	"tools":       {"session", "schema"},
	"policy":      {"tools", "session", "merkle"},
	"sections":    {"tools", "policy", "session"},
	"planning":    {"sections", "tools", "policy", "session"},
	"workspace":   {"sections", "tools", "policy", "session", "statetree", "merkle", "gitignore", "blobname"},
	"evaluation":  {"sections", "tools", "workspace"},
	"conformance": {"sections", "tools", "policy", "session"},
	"sessions":    {"session", "statetree", "store", "diffs", "blobname"},
	"history":     {"sections", "tools", "session"},
	"server":      {"sections", "tools", "policy", "session", "sessions", "schema", "identity", "store", "diffs", "telemetry"},
	"telemetry":   {},
	"transport":   {"server", "identity", "session"},
	"hooks":       {"tools", "session", "policy", "schema", "identity"},
	"consent":     {"tools", "session"},
	"console":     {"server", "sessions", "session", "identity", "store", "planning", "history", "tools", "diffs"},
}

// TestImportsPointOneWay reads every package's imports and holds them to
// allowedImports. A new package must be added to the table.
func TestImportsPointOneWay(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
			continue
		}
		imports := projectImports(t, d.Name())
		if imports == nil {
			continue // no Go files, or tooling (bench, e2e) outside the product
		}
		allowed, ok := allowedImports[d.Name()]
		if !ok {
			if d.Name() == "bench" || d.Name() == "e2e" {
				continue
			}
			t.Errorf("package %s is not in allowedImports; add it with the imports it may use", d.Name())
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s; allowed: %v", d.Name(), imp, allowed)
			}
		}
	}
}

// projectImports returns the project packages imported by the non-test Go
// files directly in dir (nil when it has none), with the module prefix
// removed and only the first path element kept.
func projectImports(t *testing.T, dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var out []string
	found := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		found = true
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				top, _, _ := strings.Cut(rest, "/")
				if !slices.Contains(out, top) {
					out = append(out, top)
				}
			}
		}
	}
	if found && out == nil {
		out = []string{}
	}
	return out
}
