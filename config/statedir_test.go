package config

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestDefaultStateDir(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		t.Skip("XDG applies to the other systems")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, c := range []struct{ xdg, want string }{
		{"/var/state", "/var/state/wink-mcp"},
		{"", filepath.Join(home, ".local", "state", "wink-mcp")},
		{"relative/state", filepath.Join(home, ".local", "state", "wink-mcp")},
	} {
		t.Setenv("XDG_STATE_HOME", c.xdg)
		if got, err := DefaultStateDir(); got != c.want || err != nil {
			t.Errorf("XDG_STATE_HOME=%q: %q, %v; want %q", c.xdg, got, err, c.want)
		}
	}
}
