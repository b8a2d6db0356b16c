package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVersion: the version stamped by scripts/dist (-X main.version=1.2.3)
// and a module version of go install (v1.2.3) are both printed as 1.2.3,
// the first thing --version says after the name.
func TestVersion(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	for _, tc := range []struct{ stamped, want string }{
		{"1.2.3", "1.2.3"},
		{"v1.2.3", "1.2.3"},
		{"1.3.0-rc.1", "1.3.0-rc.1"},
	} {
		version = tc.stamped
		if got := moduleVersion(); got != tc.want {
			t.Errorf("version %q: moduleVersion() = %q, want %q", tc.stamped, got, tc.want)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"--version"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("--version exited %d: %s", code, stderr.String())
		}
		if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.HasPrefix(first+" ", "wink-mcp "+tc.want+" ") {
			t.Errorf("version %q: --version printed %q, want it to start with %q", tc.stamped, stdout.String(), "wink-mcp "+tc.want)
		}
	}
}
