package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultStateDir returns the directory of the server's own state when
// the configuration names none: wink-mcp in the user's state directory,
// $XDG_STATE_HOME (when it is an absolute path) or else ~/.local/state; on
// macOS ~/Library/Application Support, on Windows %LocalAppData%.
func DefaultStateDir() (string, error) {
	var base string
	var err error
	switch runtime.GOOS {
	case "windows":
		base, err = os.UserCacheDir() // %LocalAppData%
	case "darwin", "ios":
		base, err = os.UserConfigDir() // ~/Library/Application Support
	default:
		if base = os.Getenv("XDG_STATE_HOME"); !filepath.IsAbs(base) {
			var home string
			home, err = os.UserHomeDir()
			base = filepath.Join(home, ".local", "state")
		}
	}
	if err != nil {
		return "", errors.New("config: no state directory (set state_dir or --state-dir): " + err.Error())
	}
	return filepath.Join(base, "wink-mcp"), nil
}

// StateDirectory returns the directory of the server's own state: state_dir,
// or DefaultStateDir when the configuration names none.
func (c *Config) StateDirectory() (string, error) {
	if c.StateDir != "" {
		return c.StateDir, nil
	}
	return DefaultStateDir()
}
