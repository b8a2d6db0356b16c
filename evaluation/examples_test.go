package evaluation

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestExamples runs the tools' examples, each on the workspace it
// assumes, and checks they say what they promise.
func TestExamples(t *testing.T) {
	needSandbox(t)
	files := map[string]string{
		"main.go":      strings.Repeat("// line\n", 11) + "package main\n",
		"package.json": `{"name": "app", "version": "1.0.0"}`,
	}
	sec, err := New(Options{RunCommand: &Sandbox{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range sec.Tools {
		for _, ex := range tool.Examples() {
			h := newHarness(t, "memory", files, Options{RunCommand: &Sandbox{}}, 0)
			r := h.cs.Call(context.Background(), tool.Name(), json.RawMessage(ex.Input), nil)
			if got := r.Said(); r.IsError || got != ex.Output {
				t.Errorf("example %q of %s:\ngot  %q\nwant %q", ex.Description, tool.Name(), got, ex.Output)
			}
		}
	}
}

// TestGuidanceExamples runs the worked examples of the guidance.
func TestGuidanceExamples(t *testing.T) {
	blocks := regexp.MustCompile("(?ms)^```\n(.*?)^```").FindAllStringSubmatch(guidance, -1)
	if len(blocks) != 2 {
		t.Fatalf("the guidance has %d worked examples, want 2", len(blocks))
	}
	h := newHarness(t, "memory", map[string]string{
		"a.go":          "// TODO one\n// TODO two\n",
		"b/c.go":        "// TODO three\n",
		"config/x.json": `{"timeout": 5}`,
		"config/y.json": `{"other": 1}`,
	}, Options{}, 0)
	for i, want := range []string{`Value: {"a.go":2,"b/c.go":1}`, "Output:\nupdated config/x.json"} {
		text, isErr := h.eval(blocks[i][1])
		if isErr || !strings.Contains(text, want) {
			t.Errorf("worked example %d: %s\nwant it to contain %q", i+1, text, want)
		}
	}
	if got := h.read("config/x.json"); !strings.Contains(got, `"timeout_ms": 5`) {
		t.Errorf("config/x.json = %s", got)
	}
}
