package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
)

func TestNormaliseTrims(t *testing.T) {
	h := newHarness(t, Config{Cache: CacheConfig{Enabled: true}, Tools: map[string]ToolConfig{"p_read": {Input: &ToolInputConfig{Trim: true}}}})
	cs := h.client("s1")
	r := cs.Call(context.Background(), "p_read", map[string]any{"key": "  spaced \n"}, nil)
	if r.IsError || r.StructuredContent["key"] != "spaced" {
		t.Fatalf("got %+v", r)
	}
	if ev := h.last(cs); string(ev.Args) != `{"key":"spaced"}` {
		t.Errorf("logged arguments %s", ev.Args)
	}
	// Tools that do not ask keep their arguments as sent.
	if r := cs.Call(context.Background(), "p_read2", map[string]any{"key": " x "}, nil); r.StructuredContent["key"] != " x " {
		t.Errorf("p_read2 got %v", r.StructuredContent)
	}
	if trimmed, ok := trimArgs([]byte(`{"a":[" x ",{"b":" y"}],"n":1.50}`)); !ok || string(trimmed) != `{"a":["x",{"b":"y"}],"n":1.50}` {
		t.Errorf("trimArgs = %s, %v", trimmed, ok)
	}
	if _, ok := trimArgs([]byte(`{not json`)); ok {
		t.Error("trimmed what is not JSON")
	}
}

// TestSecrets: a handler gets a secret from the environment or a file,
// and its value is redacted from what the model sees.
func TestSecrets(t *testing.T) {
	t.Setenv("WINK_TEST_TOKEN", "tok-123456789")
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("  file-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	echo := tools.New("echo_secret", "Return a secret, carelessly.", tools.Annotations{Title: "Echo", ReadOnly: true},
		func(ctx *tools.Context, p keyParams) (tools.Result[string], error) {
			v, err := Secret(ctx, p.Key)
			if err != nil {
				return tools.Result[string]{}, err
			}
			return tools.OK("The secret is "+v+".", v), nil
		})
	tree, err := sections.NewTree(&sections.Section{Key: "s", Title: "S", Guidance: "Secrets.", Tools: []*tools.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	hk, err := New(Config{Secrets: map[string]SecretSource{"token": {Env: "WINK_TEST_TOKEN"}, "key": {File: file}}}, tree.Tools())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "t", Version: "1", Tree: tree, Stages: hk.Stages(), Setup: hk.Setup})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, hooks: hk, srv: srv}
	cs := h.client("s")
	for name, want := range map[string]string{"token": "tok-123456789", "key": "file-secret-value"} {
		r := cs.Call(context.Background(), "echo_secret", map[string]any{"key": name}, nil)
		if r.IsError || strings.Contains(r.Text(), want) || !strings.Contains(r.Text(), "The secret is [REDACTED].") {
			t.Errorf("%s: %q", name, r.Text())
		}
	}
	if r := cs.Call(context.Background(), "echo_secret", map[string]any{"key": "nope"}, nil); r.Text() != `Tool 'echo_secret' failed: no secret "nope" is configured` {
		t.Errorf("got %q", r.Text())
	}
}

func TestSecretErrors(t *testing.T) {
	tools := probeTools(t).Tools()
	for src, want := range map[SecretSource]string{
		{Env: "WINK_TEST_UNSET_VARIABLE"}:    "secrets.s.env: environment variable WINK_TEST_UNSET_VARIABLE is not set",
		{}:                                   "secrets.s: set exactly one of env and file",
		{Env: "A", File: "b"}:                "secrets.s: set exactly one of env and file",
		{File: "/no/such/file/for/the/test"}: "secrets.s.file: open /no/such/file/for/the/test: no such file or directory",
	} {
		if _, err := New(Config{Secrets: map[string]SecretSource{"s": src}}, tools); err == nil || err.Error() != want {
			t.Errorf("%+v: got %v, want %s", src, err, want)
		}
	}
}
