package hooks

import "testing"

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{`{"a":1}`, 10, `{"a":1}`},
		{"abcdef", 3, "abc…(3 more bytes)"},
		{"aé", 2, "a…(2 more bytes)"}, // never cuts a rune in half
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := clip([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
