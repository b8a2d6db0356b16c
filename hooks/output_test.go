package hooks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedactOutput(t *testing.T) {
	h := newHarness(t, Config{
		Output: OutputConfig{Redact: []string{`sk-[A-Za-z0-9]{16}`}},
		Audit:  AuditConfig{Log: true},
	})
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_secret", map[string]any{"key": "sk-0123456789abcdef"}, nil)
	want := `Token [REDACTED] issued.` + "\n\n" + `{"key":"[REDACTED]","count":0,"runs":0}`
	if r.Text() != want {
		t.Errorf("text %q, want %q", r.Text(), want)
	}
	if r.StructuredContent["key"] != "[REDACTED]" {
		t.Errorf("structured content %v", r.StructuredContent)
	}
	ev := h.last(cs)
	if strings.Contains(mustJSON(t, ev.Value), "sk-") || strings.Contains(ev.Text, "sk-") || strings.Contains(ev.Message, "sk-") || string(ev.Args) != `{"key":"[REDACTED]"}` {
		t.Errorf("the session log holds a secret: %+v", ev)
	}
	// The arguments are redacted in the log and the audit, never for the
	// handler.
	logs := h.logged()
	if strings.Contains(logs, "sk-") || !strings.Contains(logs, `[REDACTED]`) {
		t.Errorf("audit log: %s", logs)
	}
}

// TestOutputEmbeddedStruct: a result with an embedded struct is checked
// and redacted in its JSON form, where encoding/json has promoted the
// embedded struct's fields: it matches the output schema, and a secret in
// a promoted field is redacted from the text, the structured content and
// the session's log.
func TestOutputEmbeddedStruct(t *testing.T) {
	h := newHarness(t, Config{Output: OutputConfig{Redact: []string{`sk-[A-Za-z0-9]{16}`}, Validate: true}})
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_embed", map[string]any{}, nil)
	want := "Issued.\n\n" + `{"name":"[REDACTED]","email":"a@example.com","token":"t","uses":2}`
	if r.IsError || r.Text() != want {
		t.Fatalf("got %q (error %v), want %q", r.Text(), r.IsError, want)
	}
	if sc := r.StructuredContent; sc["name"] != Redacted || sc["email"] != "a@example.com" || sc["uses"] != 2.0 || len(sc) != 4 {
		t.Errorf("structured content %v", sc)
	}
	if ev := h.last(cs); strings.Contains(mustJSON(t, ev.Value), "sk-") || strings.Contains(ev.Text, "sk-") {
		t.Errorf("the session log holds the secret: %+v", ev)
	}
}

// TestRedactorJSON: matches are replaced inside the strings and keys of a
// JSON document, each string on its own (so a pattern anchored at the
// start matches at the start of every string), and in a value's JSON form.
func TestRedactorJSON(t *testing.T) {
	r, err := NewRedactor(`secret\d`, `a"b`, `^begin`)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"x":"secret1","y":[1,"secret2x"],"secret3":true}`: `{"[REDACTED]":true,"x":"[REDACTED]","y":[1,"[REDACTED]x"]}`,
		`{"q":"a\"b"}`:                `{"q":"[REDACTED]"}`,
		`{"n":1.50,"s":"plain"}`:      `{"n":1.50,"s":"plain"}`,
		`{"a":"begin begin","b":"x"}`: `{"a":"[REDACTED] begin","b":"x"}`,
		`not json secret9`:            `not json [REDACTED]`,
	} {
		if got := string(r.JSON(json.RawMessage(in))); got != want {
			t.Errorf("JSON(%s) = %s, want %s", in, got, want)
		}
	}
	v, changed := r.Value(card{owner: owner{Name: "begin here"}, Token: "secret7"})
	if got := mustJSON(t, v); !changed || got != `{"name":"[REDACTED] here","token":"[REDACTED]","uses":0}` {
		t.Errorf("Value = %s (changed %v)", got, changed)
	}
}

// TestValidateOutput: a result that does not match its output schema is an
// error result, its state change is restored, and the bug is logged.
func TestValidateOutput(t *testing.T) {
	h := newHarness(t, Config{Output: OutputConfig{Validate: true}})
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_liar", map[string]any{}, nil)
	want := "Tool 'p_liar' failed: its result does not match its output schema: /n: expected integer, got string"
	if !r.IsError || r.Text() != want || r.StructuredContent != nil {
		t.Errorf("got %+v, want the error %q", r, want)
	}
	if n := h.count(cs); n != 0 {
		t.Errorf("count = %d, want 0 (restored)", n)
	}
	if ev := h.last(cs); ev.ErrorClass != "output" {
		t.Errorf("class %q, want output", ev.ErrorClass)
	}
	if !strings.Contains(h.logged(), "does not match its output schema (a bug in the tool)") {
		t.Errorf("the bug was not logged: %s", h.logged())
	}
	// Results that match pass.
	if r := cs.Call(context.Background(), "p_read", map[string]any{}, nil); r.IsError {
		t.Error(r.Text())
	}
	_, err := New(Config{Tools: map[string]ToolConfig{"p_text": {Output: &ToolOutputConfig{Validate: ptr(true)}}}}, h.srv.Tools())
	if want := `tools.p_text.output.validate: tool "p_text" has no output schema`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestCapOutput(t *testing.T) {
	h := newHarness(t, Config{Output: OutputConfig{MaxTextBytes: 101}})
	h.probe.big = 1000 // 500 two-byte characters
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_big", map[string]any{}, nil)
	text := r.Text()
	head, marker, ok := strings.Cut(text, "\n\n[Output truncated")
	if !ok || !utf8.ValidString(head) || len(head) != 100 {
		t.Fatalf("text %q", text)
	}
	if want := ": showing the first 100 of 1034 bytes; the structured content holds the whole value.]"; marker != want {
		t.Errorf("marker %q, want %q", marker, want)
	}
	// The structured content stays whole, so the result stays valid for
	// the tool's output schema: a client that checks it accepts the result.
	if r.StructuredContent["key"] != "big" || len(r.Content) != 1 {
		t.Errorf("content %+v, structured %v", r.Content, r.StructuredContent)
	}
	if ev := h.last(cs); ev.Text != text {
		t.Error("the session log does not hold what the client saw")
	}
	// Short texts are untouched.
	if r := cs.Call(context.Background(), "p_text", map[string]any{}, nil); r.Text() != "Plain.\n\n\"text\"" {
		t.Errorf("got %q", r.Text())
	}
	// Per tool.
	h = newHarness(t, Config{Output: OutputConfig{MaxTextBytes: 10}, Tools: map[string]ToolConfig{"p_big": {Output: &ToolOutputConfig{MaxTextBytes: ptr(0)}}}})
	cs = h.client("s1")
	if r := cs.Call(context.Background(), "p_big", map[string]any{}, nil); strings.Contains(r.Text(), "truncated") {
		t.Error("p_big capped with its cap off")
	}
	if r := cs.Call(context.Background(), "p_text", map[string]any{}, nil); !strings.Contains(r.Text(), "showing the first 10 of 14 bytes.]") {
		t.Errorf("got %q", r.Text())
	}
}
