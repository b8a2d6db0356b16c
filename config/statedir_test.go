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

// TestStateDirectory: state_dir when the configuration names one, the
// default otherwise.
func TestStateDirectory(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	t.Setenv("HOME", t.TempDir())
	def, err := DefaultStateDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ stateDir, want string }{
		{"/srv/wink", "/srv/wink"},
		{"", def},
	} {
		if got, err := (&Config{StateDir: c.stateDir}).StateDirectory(); got != c.want || err != nil {
			t.Errorf("state_dir %q: %q, %v; want %q", c.stateDir, got, err, c.want)
		}
	}
}
