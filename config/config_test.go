package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/hooks"
)

const briefExample = `sections: [planning]            # which built-in sections are on, in this order
planning:
  strategy: react               # react | plan_act_reflect | goal_decompose_route_synthesise
policies:
  sequential_dependency:        # server-wide: tool -> tools that must have succeeded first
    planning_add_step: [planning_read_plan]
deadline: 30s                   # per-call deadline
`

// exported returns a copy of c without the unexported bookkeeping fields,
// for comparisons.
func exported(c *Config) Config {
	e := *c
	e.name, e.lines = "", nil
	return e
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(c *Config)
	}{
		{"empty", "", func(c *Config) {}},
		{"comments only", "# nothing here\n\n   # still nothing\n", func(c *Config) {}},
		{"document marker only", "---\n", func(c *Config) {}},
		{"brief example", briefExample, func(c *Config) {
			c.Sections = []string{"planning"}
			c.Planning.Strategy = "react"
			c.Policies.SequentialDependency = map[string][]string{"planning_add_step": {"planning_read_plan"}}
		}},
		{"no sections", "sections: []\n", func(c *Config) { c.Sections = []string{} }},
		{"read_before_write off", "policies:\n  read_before_write: false\n", func(c *Config) { c.Policies.ReadBeforeWrite = false }},
		{"deadline", "deadline: 1m30s\n", func(c *Config) { c.Deadline = 90 * time.Second }},
		{"disk backend", "workspace:\n  backend: disk\n  root: /srv/ws\n  max_bytes: 0\n", func(c *Config) {
			c.Workspace = Workspace{Backend: "disk", Root: "/srv/ws", MaxBytes: 0, MaxFileBytes: 32 << 20, Open: true}
		}},
		{"closed sections", "planning: {open: false}\nworkspace:\n  open: false\n", func(c *Config) {
			c.Planning.Open = false
			c.Workspace.Open = false
		}},
		{"mounts", "workspace:\n  mounts:\n    - host: /a\n      path: b\n      include: ['*.go']\n      exclude: [x]\n    - host: /c\n", func(c *Config) {
			c.Workspace.Mounts = []Mount{{Host: "/a", Path: "b", Include: []string{"*.go"}, Exclude: []string{"x"}}, {Host: "/c"}}
		}},
		{"workspace limits", "workspace:\n  allowed_roots: [/home]\n  max_file_bytes: 1024\n  mounts:\n    - host: /home/a\n      follow_symlinks: true\n", func(c *Config) {
			c.Workspace.AllowedRoots = []string{"/home"}
			c.Workspace.MaxFileBytes = 1024
			c.Workspace.Mounts = []Mount{{Host: "/home/a", FollowSymlinks: true}}
		}},
		{"float that is an integer", "workspace:\n  max_bytes: 1e3\n", func(c *Config) { c.Workspace.MaxBytes = 1000 }},
		{"http", "http:\n  addr: 127.0.0.1:9\n  session_ttl: 5m\n  auth:\n    bearer_token_file: /t\n", func(c *Config) {
			c.HTTP.Addr = "127.0.0.1:9"
			c.HTTP.SessionTTL = 5 * time.Minute
			c.HTTP.Auth.BearerTokenFile = "/t"
		}},
		{"json", `{"deadline": "5s", "sections": ["a", "b"]}`, func(c *Config) {
			c.Deadline = 5 * time.Second
			c.Sections = []string{"a", "b"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("config.yaml", []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(exported(got), exported(want)) {
				t.Errorf("Parse:\n got %+v\nwant %+v", exported(got), exported(want))
			}
		})
	}
}

func TestDefault(t *testing.T) {
	want := Config{
		Planning:   Planning{Open: true},
		History:    History{Retention: 20},
		Policies:   Policies{ReadBeforeWrite: true},
		Deadline:   30 * time.Second,
		Workspace:  Workspace{Backend: "memory", MaxBytes: 64 << 20, MaxFileBytes: 32 << 20, Open: true},
		Evaluation: Evaluation{MaxSteps: 10_000_000, MaxOutputBytes: 64 << 10, MaxMemoryBytes: 256 << 20, RunCommand: RunCommand{CPUSeconds: 60, MemoryBytes: 1 << 30, Processes: 64}},
		NATS:       NATS{Replicas: 1},
		Hooks:      hooks.Defaults(),
		HTTP: HTTP{
			MaxBodyBytes:            4 << 20,
			SessionTTL:              30 * time.Minute,
			DrainTimeout:            5 * time.Second,
			ReadTimeout:             30 * time.Second,
			IdleTimeout:             2 * time.Minute,
			MaxConnections:          1024,
			MaxSessionsPerPrincipal: 1000,
			SSERetry:                time.Second,
		},
		Consent: consent.Config{Fallback: consent.Deny},

		StoreDormancy: 30 * time.Second,
	}
	if got := exported(Default()); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() = %+v, want %+v", got, want)
	}
	if Default().Sections != nil {
		t.Error("Default().Sections is not nil")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the whole error message
		key  string // the key of the first error
		line int    // the line of the first error
	}{
		{
			name: "unknown top-level key",
			in:   "sections: [planning]\ndeadlne: 30s\n",
			want: "config.yaml:2: deadlne: unknown key (known keys: consent, deadline, evaluation, history, hooks, http, nats, planning, policies, sections, state_dir, store, store_dormancy, store_sync, workspace)",
			key:  "deadlne", line: 2,
		},
		{
			name: "http duration not a duration",
			in:   "http:\n  session_ttl: forever\n",
			want: `config.yaml:2: http.session_ttl: invalid duration "forever" (use a Go duration such as "30s" or "1m30s")`,
			key:  "http.session_ttl", line: 2,
		},
		{
			name: "http duration not positive",
			in:   "http:\n  drain_timeout: 0s\n",
			want: `config.yaml:2: http.drain_timeout: must be greater than 0, got "0s"`,
			key:  "http.drain_timeout", line: 2,
		},
		{
			name: "jwt without audience",
			in:   "http:\n  auth:\n    jwt:\n      jwks_url: https://a/jwks\n      issuer: https://a\n",
			want: `config.yaml:3: http.auth.jwt: missing required key "audience"`,
			key:  "http.auth.jwt", line: 3,
		},
		{
			name: "unknown nested key",
			in:   "planning:\n  strtegy: react\n",
			want: "config.yaml:2: planning.strtegy: unknown key (known keys: open, strategy)",
			key:  "planning.strtegy", line: 2,
		},
		{
			name: "unknown key in a list item",
			in:   "workspace:\n  mounts:\n    - host: /a\n      hots: /b\n",
			want: "config.yaml:4: workspace.mounts[0].hots: unknown key (known keys: exclude, follow_symlinks, host, include, path)",
			key:  "workspace.mounts[0].hots", line: 4,
		},
		{
			name: "sections not a list",
			in:   "sections: planning\n",
			want: "config.yaml:1: sections: expected list, got string",
			key:  "sections", line: 1,
		},
		{
			name: "deadline not a string",
			in:   "deadline: 30\n",
			want: "config.yaml:1: deadline: expected string, got integer",
			key:  "deadline", line: 1,
		},
		{
			name: "null value",
			in:   "planning:\n",
			want: "config.yaml:1: planning: expected mapping, got null",
			key:  "planning", line: 1,
		},
		{
			name: "wrong type in a list",
			in:   "sections:\n  - planning\n  - 3\n",
			want: "config.yaml:3: sections[1]: expected string, got integer",
			key:  "sections[1]", line: 3,
		},
		{
			name: "top level not a mapping",
			in:   "- planning\n",
			want: "config.yaml:1: expected mapping, got list",
			key:  "", line: 1,
		},
		{
			name: "bad enum",
			in:   "planning:\n  strategy: reactive\n",
			want: "config.yaml:2: planning.strategy: must be one of: react, plan_act_reflect, goal_decompose_route_synthesise",
			key:  "planning.strategy", line: 2,
		},
		{
			name: "bad backend",
			in:   "workspace:\n  backend: tape\n",
			want: "config.yaml:2: workspace.backend: must be one of: memory, disk",
			key:  "workspace.backend", line: 2,
		},
		{
			name: "bad duration",
			in:   "deadline: 30 seconds\n",
			want: `config.yaml:1: deadline: invalid duration "30 seconds" (use a Go duration such as "30s" or "1m30s")`,
			key:  "deadline", line: 1,
		},
		{
			name: "zero duration",
			in:   "\n\ndeadline: 0s\n",
			want: `config.yaml:3: deadline: must be greater than 0, got "0s"`,
			key:  "deadline", line: 3,
		},
		{
			name: "negative duration",
			in:   "deadline: -5s\n",
			want: `config.yaml:1: deadline: must be greater than 0, got "-5s"`,
			key:  "deadline", line: 1,
		},
		{
			name: "negative max_bytes",
			in:   "workspace:\n  max_bytes: -1\n",
			want: "config.yaml:2: workspace.max_bytes: must be at least 0, got -1",
			key:  "workspace.max_bytes", line: 2,
		},
		{
			name: "fractional max_bytes",
			in:   "workspace:\n  max_bytes: 1.5\n",
			want: "config.yaml:2: workspace.max_bytes: expected integer, got number",
			key:  "workspace.max_bytes", line: 2,
		},
		{
			name: "huge max_bytes",
			in:   "workspace:\n  max_bytes: 1e20\n",
			want: "config.yaml:2: workspace.max_bytes: number 100000000000000000000 is out of range",
			key:  "workspace.max_bytes", line: 2,
		},
		{
			name: "disk backend without root",
			in:   "workspace:\n  backend: disk\n",
			want: `config.yaml:1: workspace: missing required key "root" (required when backend is disk)`,
			key:  "workspace", line: 1,
		},
		{
			name: "memory backend with root",
			in:   "workspace:\n  backend: memory\n  root: /srv/ws\n",
			want: "config.yaml:3: workspace.root: not allowed unless backend is disk",
			key:  "workspace.root", line: 3,
		},
		{
			name: "default backend with root",
			in:   "workspace:\n  root: /srv/ws\n",
			want: "config.yaml:2: workspace.root: not allowed unless backend is disk",
			key:  "workspace.root", line: 2,
		},
		{
			name: "mount without host",
			in:   "workspace:\n  mounts:\n    - path: x\n",
			want: `config.yaml:3: workspace.mounts[0]: missing required key "host"`,
			key:  "workspace.mounts[0]", line: 3,
		},
		{
			name: "bad glob",
			in:   "workspace:\n  mounts:\n    - host: /a\n      exclude: ['[a-']\n",
			want: `config.yaml:4: workspace.mounts[0].exclude[0]: invalid glob pattern "[a-"`,
			key:  "workspace.mounts[0].exclude[0]", line: 4,
		},
		{
			name: "duplicate key",
			in:   "planning:\n  strategy: react\ndeadline: 5s\nplanning:\n  strategy: react\n",
			want: "config.yaml:4: planning: duplicate key (first defined on line 1)",
			key:  "planning", line: 4,
		},
		{
			name: "empty dependency list",
			in:   "policies:\n  sequential_dependency:\n    deploy: []\n",
			want: "config.yaml:3: policies.sequential_dependency.deploy: must not be empty",
			key:  "policies.sequential_dependency.deploy", line: 3,
		},
		{
			name: "duplicate dependency",
			in:   "policies:\n  sequential_dependency:\n    deploy:\n      - build\n      - test\n      - build\n",
			want: `config.yaml:6: policies.sequential_dependency.deploy[2]: duplicate entry "build" (same as [0])`,
			key:  "policies.sequential_dependency.deploy[2]", line: 6,
		},
		{
			name: "empty tool name",
			in:   "policies:\n  sequential_dependency:\n    deploy: ['']\n",
			want: "config.yaml:3: policies.sequential_dependency.deploy[0]: must not be empty",
			key:  "policies.sequential_dependency.deploy[0]", line: 3,
		},
		{
			name: "empty tool name as key",
			in:   "policies:\n  sequential_dependency:\n    '': [build]\n",
			want: `config.yaml:3: policies.sequential_dependency: empty key`,
			key:  `policies.sequential_dependency`, line: 3,
		},
		{
			name: "empty tool name as key without a value",
			in:   "policies:\n  sequential_dependency:\n    '':\n",
			want: `config.yaml:3: policies.sequential_dependency: empty key`,
			key:  `policies.sequential_dependency`, line: 3,
		},
		{
			name: "dependency not a list",
			in:   "policies:\n  sequential_dependency:\n    deploy: build\n",
			want: "config.yaml:3: policies.sequential_dependency.deploy: expected list, got string",
			key:  "policies.sequential_dependency.deploy", line: 3,
		},
		{
			name: "several errors in line order",
			in: "workspace:\n  backend: disk\n  max_bytes: -1\nplanning:\n  strategy: fast\n" +
				"deadline: soon\nsections: [a, a]\nextra: 1\n",
			want: `config.yaml:1: workspace: missing required key "root" (required when backend is disk)` + "\n" +
				"config.yaml:3: workspace.max_bytes: must be at least 0, got -1\n" +
				"config.yaml:5: planning.strategy: must be one of: react, plan_act_reflect, goal_decompose_route_synthesise\n" +
				`config.yaml:6: deadline: invalid duration "soon" (use a Go duration such as "30s" or "1m30s")` + "\n" +
				`config.yaml:7: sections[1]: duplicate entry "a" (same as [0])` + "\n" +
				"config.yaml:8: extra: unknown key (known keys: consent, deadline, evaluation, history, hooks, http, nats, planning, policies, sections, state_dir, store, store_dormancy, store_sync, workspace)",
			key: "workspace", line: 1,
		},
		{
			name: "non-string key",
			in:   "policies:\n  sequential_dependency:\n    1: [build]\n",
			want: `config.yaml:3: policies.sequential_dependency: key "1" is an integer; keys must be strings`,
			key:  "policies.sequential_dependency", line: 3,
		},
		{
			name: "anchor and alias",
			in:   "sections: &s [planning]\nplanning: *s\n",
			want: "config.yaml:1: sections: YAML anchors (&s) are not supported\n" +
				"config.yaml:2: planning: YAML aliases (*s) are not supported",
			key: "sections", line: 1,
		},
		{
			name: "merge key",
			in:   "planning:\n  <<: {strategy: react}\n",
			want: "config.yaml:2: planning: YAML merge keys (<<) are not supported",
			key:  "planning", line: 2,
		},
		{
			name: "custom tag",
			in:   "deadline: !env DEADLINE\n",
			want: `config.yaml:1: deadline: unsupported YAML tag "!env"`,
			key:  "deadline", line: 1,
		},
		{
			name: "not a number",
			in:   "workspace:\n  max_bytes: .nan\n",
			want: "config.yaml:2: workspace.max_bytes: number .nan is not a finite number",
			key:  "workspace.max_bytes", line: 2,
		},
		{
			name: "two documents",
			in:   "deadline: 5s\n---\ndeadline: 6s\n",
			want: "config.yaml:2: a configuration file must hold a single YAML document",
			key:  "", line: 2,
		},
		{
			name: "YAML syntax error",
			in:   "planning:\n\tstrategy: react\n",
			want: "config.yaml:2: invalid YAML: found character that cannot start any token",
			key:  "", line: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", exported(c))
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error %T is not a *KeyError", err)
			}
			if ke.File != "config.yaml" || ke.Key != tt.key || ke.Line != tt.line {
				t.Errorf("first error at %s:%d key %q, want config.yaml:%d key %q", ke.File, ke.Line, ke.Key, tt.line, tt.key)
			}
			if n := strings.Count(tt.want, "\n") + 1; n > 1 {
				var es Errors
				if !errors.As(err, &es) || len(es) != n {
					t.Errorf("got %T with %d errors, want Errors with %d", err, len(es), n)
				}
			}
		})
	}
}

func TestKeyError(t *testing.T) {
	tests := []struct {
		err  KeyError
		want string
	}{
		{KeyError{"config.yaml", "policies.sequential_dependency.deploy", 4, `unknown tool "bild"`}, `config.yaml:4: policies.sequential_dependency.deploy: unknown tool "bild"`},
		{KeyError{"config.yaml", "deadline", 0, "bad"}, "config.yaml: deadline: bad"},
		{KeyError{"config.yaml", "", 3, "bad"}, "config.yaml:3: bad"},
		{KeyError{"", "deadline", 0, "bad"}, "deadline: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	c, err := Parse("config.yaml", []byte(briefExample+"workspace:\n  mounts:\n    - host: /a\n      include:\n        - '*.go'\n"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{
		"sections":          1,
		"sections[0]":       1,
		"planning":          2,
		"planning.strategy": 3,
		"policies.sequential_dependency.planning_add_step":    6,
		"policies.sequential_dependency.planning_add_step[0]": 6,
		"deadline":                       7,
		"workspace.mounts[0]":            10,
		"workspace.mounts[0].host":       10,
		"workspace.mounts[0].include[0]": 12,
		"workspace.backend":              0,
		"nope":                           0,
	} {
		if got := c.Line(key); got != want {
			t.Errorf("Line(%q) = %d, want %d", key, got, want)
		}
	}
	err = c.Errorf("policies.sequential_dependency.planning_add_step", "unknown tool %q", "bild")
	if want := `config.yaml:6: policies.sequential_dependency.planning_add_step: unknown tool "bild"`; err.Error() != want {
		t.Errorf("Errorf = %q, want %q", err, want)
	}
	if got := Default().Line("deadline"); got != 0 {
		t.Errorf("Default().Line = %d, want 0", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(briefExample), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Planning.Strategy != "react" {
		t.Errorf("Strategy = %q, want react", c.Planning.Strategy)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("deadline: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if want := bad + ":1: deadline: expected string, got integer"; err == nil || err.Error() != want {
		t.Errorf("Load(bad) error = %v, want %s", err, want)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want a not-exist error naming %s", err, missing)
	}
}

// commentedKey matches a line of example.yaml that shows a key commented
// out ("# key: value", a list item "# - key: value", or a line inside one).
var commentedKey = regexp.MustCompile(`(?m)^([ \t]*)# ([ \t]*(?:- )?[a-z_]+:(?:[ \t]|$).*)$`)

// TestExampleFile: example.yaml with its commented keys put back shows
// every key of the schema, with the values it documents; as shipped it
// parses too (TestExampleServes in package main runs it).
func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("example.yaml", data); err != nil {
		t.Fatalf("as shipped: %v", err)
	}
	c, err := Parse("example.yaml", commentedKey.ReplaceAll(data, []byte("$1$2")))
	if err != nil {
		t.Fatalf("with its commented keys: %v", err)
	}
	want := Config{
		Sections: []string{"planning"},
		Planning: Planning{Strategy: "plan_act_reflect", Open: false},
		History:  History{Retention: 50},
		Policies: Policies{
			SequentialDependency: map[string][]string{
				"planning_add_step":    {"planning_read_plan"},
				"planning_update_step": {"planning_read_plan", "planning_add_step"},
			},
			ReadBeforeWrite: true,
		},
		Deadline:  90 * time.Second,
		StateDir:  "/var/lib/wink/state",
		Store:     "nats://nats-1:4222,nats-2:4222,nats-3:4222",
		StoreSync: "interval",
		NATS:      NATS{Creds: "/etc/wink/nats.creds", CA: "/etc/wink/nats-ca.pem", Cert: "/etc/wink/nats-client.pem", Key: "/etc/wink/nats-client.key", Replicas: 3},
		Workspace: Workspace{
			Backend: "disk",
			Root:    "/var/lib/wink/workspace",
			Mounts: []Mount{
				{Host: "/home/me/project", Path: "project", Include: []string{"*.go", "go.mod", "go.sum"}, Exclude: []string{"*_test.go"}, FollowSymlinks: true},
				{Host: "/home/me/notes"},
			},
			MaxBytes:     128 << 20,
			AllowedRoots: []string{"/home/me"},
			MaxFileBytes: 16 << 20,
			Open:         true,
		},
		Evaluation: Evaluation{Isolate: true, MaxSteps: 5_000_000, MaxOutputBytes: 32 << 10, MaxMemoryBytes: 128 << 20, RunCommand: RunCommand{CPUSeconds: 30, MemoryBytes: 512 << 20, Processes: 32}},
		Hooks:      exampleHooks,
		Consent:    consent.Config{Enabled: true, Tools: []string{"planning_setup_plan", "planning_update_*"}, Fallback: consent.Deny, Remember: true},

		StoreDormancy: 30 * time.Second,
		HTTP: HTTP{
			Addr:                    "127.0.0.1:8080",
			AllowedOrigins:          []string{"https://app.example.com"},
			AllowedHosts:            []string{"mcp.example.com"},
			MaxBodyBytes:            8 << 20,
			SessionTTL:              time.Hour,
			DrainTimeout:            5 * time.Second,
			ReadTimeout:             time.Minute,
			IdleTimeout:             90 * time.Second,
			MaxConnections:          256,
			MaxSessionsPerPrincipal: 100,
			SSERetry:                2 * time.Second,
			BasePath:                "/wink",
			PublicURL:               "https://mcp.example.com/wink/mcp",
			RequestStateKeyFile:     "/etc/wink/request-state.key",
			Auth: HTTPAuth{
				BearerTokenFile: "/etc/wink/tokens",
				JWT: &JWT{
					JWKSURL:  "https://auth.example.com/.well-known/jwks.json",
					Issuer:   "https://auth.example.com/",
					Audience: "https://mcp.example.com/wink/mcp",
					Scopes:   []string{"mcp"},
				},
			},
		},
	}
	if got := exported(c); !reflect.DeepEqual(got, want) {
		t.Errorf("example.yaml:\n got %+v\nwant %+v", got, want)
	}

	// The example shows every key of the schema.
	cs, err := loadSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range schemaKeys(cs.doc, "") {
		if c.Line(key) == 0 {
			t.Errorf("example.yaml does not show %s", key)
		}
	}
}

// schemaKeys lists the dotted paths of the fixed properties in the schema,
// with list items as [0].
func schemaKeys(s any, prefix string) []string {
	m, _ := s.(map[string]any)
	var keys []string
	if items, ok := m["items"]; ok {
		keys = append(keys, schemaKeys(items, prefix+"[0]")...)
	}
	props, _ := m["properties"].(map[string]any)
	for name, p := range props {
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		keys = append(keys, key)
		keys = append(keys, schemaKeys(p, key)...)
	}
	return keys
}

var update = flag.Bool("update", false, "write schema.json from the Config type")

// TestSchemaFile checks that schema.json, the schema for editors, is the
// one generated from the Config type; go test -run TestSchemaFile -update
// writes it.
func TestSchemaFile(t *testing.T) {
	cs, err := loadSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("schema.json", cs.json, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, cs.json) {
		t.Error("schema.json is not the schema of the Config type; run go test ./config -run TestSchemaFile -update")
	}
}

// TestSchemaRules checks what the schema's generation cannot see: every
// key has a description, and every format a check.
func TestSchemaRules(t *testing.T) {
	cs, err := loadSchema()
	if err != nil {
		t.Fatal(err)
	}
	var walk func(path string, s any)
	walk = func(path string, s any) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		if f, ok := m["format"].(string); ok && formatCheck(f) == nil {
			t.Errorf("%s: format %q has no check", path, f)
		}
		props, _ := m["properties"].(map[string]any)
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s: no description (add a jsonschema tag)", path, name)
			}
			walk(path+"."+name, p)
		}
		walk(path+"[]", m["items"])
		walk(path+"{}", m["additionalProperties"])
	}
	walk("", cs.doc)
}

func TestSchemaTags(t *testing.T) {
	type list struct {
		L []string `json:"l" jsonschema:"A list." schema:"minItems=1,minLength=2,required"`
	}
	type bad struct {
		N int `json:"n" jsonschema:"A number." schema:"minLength=1"`
	}
	type unknown struct {
		N int `json:"n" jsonschema:"A number." schema:"multipleOf=2"`
	}
	s, err := jsonschema.For[list](nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := annotate(reflect.TypeFor[list](), reflect.Value{}, s); err != nil {
		t.Fatal(err)
	}
	l := s.Properties["l"]
	if *l.MinItems != 1 || *l.Items.MinLength != 2 || !slices.Equal(s.Required, []string{"l"}) {
		t.Errorf("schema %+v", s)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[bad](), reflect.TypeFor[unknown]()} {
		s, err := jsonschema.ForType(typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := annotate(typ, reflect.Value{}, s); err == nil {
			t.Errorf("%s: annotated", typ)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * time.Second: "30s", 30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 100 * time.Millisecond: "100ms", 61 * time.Second: "1m1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %s, want %s", d, got, want)
		}
	}
}

// encode writes c back as a file (JSON, which is YAML too), leaving out
// nil lists and maps and empty strings, which stand for absent keys.
func encode(t testing.TB, c *Config) []byte {
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	cs, err := loadSchema()
	if err != nil {
		t.Fatal(err)
	}
	v = mapFormats(cs.doc, v, nil, func(format string, v any, _ []any) any {
		if n, ok := v.(float64); ok && strings.HasSuffix(format, "go-duration") {
			return time.Duration(n).String()
		}
		return v
	})
	data, err = json.Marshal(dropNulls(v))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil || x == "" {
				delete(v, k)
			} else {
				v[k] = dropNulls(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = dropNulls(x)
		}
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"example.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, data)
	}
	checkRoundTrip(t, []byte(briefExample))
	checkRoundTrip(t, []byte("sections: []\n"))
}

// checkRoundTrip checks that if data parses, the configuration written
// back parses again to the same configuration.
func checkRoundTrip(t testing.TB, data []byte) {
	c, err := Parse("in.yaml", data)
	if err != nil {
		return
	}
	out := encode(t, c)
	c2, err := Parse("out.json", out)
	if err != nil {
		t.Fatalf("accepted config %q re-encoded as %s does not validate: %v", data, out, err)
	}
	if got, want := exported(c2), exported(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip of %q through %s:\n got %+v\nwant %+v", data, out, got, want)
	}
}

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		"",
		"# comment\n",
		briefExample,
		string(example),
		"workspace:\n  backend: disk\n",
		"sections: [a, a]\nplanning: {strategy: x}\n",
		"a: &x 1\nb: *x\n",
		"policies:\n  sequential_dependency:\n    '': []\n    1: [x]\n",
		"workspace: {max_bytes: 1e300}\n",
		"deadline: 2001-12-14\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			// Every problem is reported as a KeyError in the file, and
			// several come sorted by line.
			var ke *KeyError
			if !errors.As(err, &ke) || ke.File != "fuzz.yaml" {
				t.Fatalf("error %T is not a KeyError in fuzz.yaml: %v", err, err)
			}
			var es Errors
			if errors.As(err, &es) && !slices.IsSortedFunc(es, func(a, b *KeyError) int { return cmpLine(a.Line, b.Line) }) {
				t.Fatalf("errors not sorted by line:\n%v", err)
			}
			return
		}
		if c.Deadline <= 0 {
			t.Fatalf("accepted deadline %v", c.Deadline)
		}
		checkRoundTrip(t, data)
	})
}

// cmpLine orders lines as Errors does: unknown (0) last.
func cmpLine(a, b int) int {
	if a == 0 {
		a = math.MaxInt
	}
	if b == 0 {
		b = math.MaxInt
	}
	return cmp.Compare(a, b)
}
