package hooks

import "testing"

// TestRedactorPatterns: patterns with and without a literal prefix, case
// folding included, redact wherever the text is.
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
	}
}
