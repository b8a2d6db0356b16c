package hooks

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

type (
	redactLeaf struct {
		Name  string            `json:"name"`
		Tags  map[string]string `json:"tags,omitempty"`
		Any   any               `json:"any"`
		Skip  string            `json:"-"`
		inner string
	}
	redactTree struct {
		redactLeaf
		Leaves []*redactLeaf `json:"leaves"`
		Notes  [2]string     `json:"notes"`
		Count  int           `json:"count"`
	}
)

// TestValueMayMatch: when the strings of a value show no match, redacting
// its JSON form changes nothing; values whose JSON form the Go value does
// not show are left to the JSON form.
func TestValueMayMatch(t *testing.T) {
	r, err := NewRedactor(`sk-[A-Za-z0-9]{20,}`, `ghp_[A-Za-z0-9]{8}`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	str := func() string {
		if rng.IntN(20) == 0 {
			return []string{"key sk-" + strings.Repeat("a", 24), "ghp_12345678", `q"ghp_abcdefgh`}[rng.IntN(3)]
		}
		return []string{"", "plain", "sk-short", "ghp_", "<&>"}[rng.IntN(5)]
	}
	var leaf func(depth int) *redactLeaf
	leaf = func(depth int) *redactLeaf {
		l := &redactLeaf{Name: str(), Skip: "sk-" + strings.Repeat("b", 24), inner: "ghp_12345678"}
		if rng.IntN(2) == 0 {
			l.Tags = map[string]string{str(): str(), str(): str()}
		}
		switch rng.IntN(4) {
		case 0:
			l.Any = str()
		case 1:
			l.Any = []any{str(), 3, map[string]any{str(): str()}}
		case 2:
			if depth < 3 {
				l.Any = leaf(depth + 1)
			}
		}
		return l
	}
	var may, clean int
	for range 3000 {
		v := redactTree{redactLeaf: *leaf(0), Notes: [2]string{str(), str()}, Count: rng.IntN(10)}
		for range rng.IntN(3) {
			v.Leaves = append(v.Leaves, leaf(1))
		}
		m, known := r.valueMayMatch(v)
		if !known {
			t.Fatalf("unknown for %+v", v)
		}
		_, changed := r.Value(v)
		if changed && !m {
			t.Fatalf("no match in the strings, but redaction changed %+v", v)
		}
		if m {
			may++
		} else {
			clean++
		}
	}
	if may < 100 || clean < 100 {
		t.Errorf("%d values may match and %d do not: the test does not exercise both", may, clean)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for name, v := range map[string]any{
		"cyclic":    cyclic,
		"marshaler": time.Now(),
		"bytes":     struct{ B []byte }{[]byte("sk-")},
		"string tag": struct {
			N int `json:"n,string"`
		}{1},
		"nested bytes": map[string]any{"b": []byte("x")},
	} {
		if _, known := r.valueMayMatch(v); known {
			t.Errorf("%s: known, want the JSON form looked at", name)
		}
	}
}

// TestRedactorPatterns: patterns with and without a literal prefix, case
// folding included, redact the same wherever the text is.
func TestRedactorPatterns(t *testing.T) {
	r, err := NewRedactor(`sk-[a-z]{4}`, `(?i)token=\w+`, `\d{4}-\d{4}`, `^begin`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"key sk-abcd and sk-ab", "key [REDACTED] and sk-ab"},
		{"TOKEN=xyz; Token=abc", "[REDACTED]; [REDACTED]"},
		{"card 1234-5678", "card [REDACTED]"},
		{"begin begin", "[REDACTED] begin"},
		{"sk-", "sk-"},
	} {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if may := r.mayMatch([]byte(tt.in)); may != (tt.in != tt.want) {
			t.Errorf("mayMatch(%q) = %v", tt.in, may)
		}
	}
}

// TestCallMayMatch: the redaction stage's one look at a whole call finds a
// pattern's prefix wherever it is (arguments, text, message, text blocks,
// value), and lets through only calls that hold none.
func TestCallMayMatch(t *testing.T) {
	r, err := NewRedactor(`sk-[A-Za-z0-9]{20,}`, `ghp_[A-Za-z0-9]{8}`)
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(text, msg, block string, value any) *tools.Outcome {
		out := &tools.Outcome{Success: true, Message: msg, Value: value}
		out.SetText(text)
		if block != "" {
			out.Content = []mcp.Content{mcp.NewTextContent(block)}
		}
		return out
	}
	key := "sk-" + strings.Repeat("a", 24)
	for _, c := range []struct {
		name string
		args string
		out  *tools.Outcome
		want bool
	}{
		{"nothing", `{"q":"plain"}`, outcome("text", "msg", "block", map[string]any{"k": "v"}), false},
		{"no value", `{}`, outcome("text", "", "", nil), false},
		{"arguments", `{"q":"` + key + `"}`, outcome("text", "msg", "", nil), true},
		{"escaped arguments", `{"q":"sk\u002d"}`, outcome("text", "msg", "", nil), true},
		{"text", `{}`, outcome("a "+key, "msg", "", nil), true},
		{"message", `{}`, outcome("text", "ghp_12345678", "", nil), true},
		{"text block", `{}`, outcome("text", "msg", key, nil), true},
		{"value string", `{}`, outcome("text", "msg", "", map[string]any{"k": []string{"x", key}}), true},
		{"value key", `{}`, outcome("text", "msg", "", map[string]int{key: 1}), true},
		{"opaque value", `{}`, outcome("text", "msg", "", time.Now()), true},
	} {
		if got := r.callMayMatch([]byte(c.args), c.out); got != c.want {
			t.Errorf("%s: callMayMatch = %v, want %v", c.name, got, c.want)
		}
	}
}
