package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDir: --state-dir and state_dir say where a disk workspace keeps
// its locks and journals (the flag wins), and one that cannot be used is a
// startup error that names it.
func TestStateDir(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("state_dir: "+blocked+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"flag", []string{"--state-dir", blocked}, 1},
		{"key", []string{"--config", cfg}, 1},
		{"the flag wins", []string{"--config", cfg, "--state-dir", t.TempDir()}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--workspace", t.TempDir()}, c.args...)
			code := run(context.Background(), args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if code != c.code || c.code != 0 && !strings.Contains(stderr.String(), "state directory "+blocked) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
		})
	}
}
