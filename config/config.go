package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"time"
)

// Config is the server's configuration. Default returns the configuration
// used when there is no file; Parse and Load start from it and override
// the keys the file sets.
//
// Each field that comes from the file carries a json tag naming its key,
// and schema.json describes that key. To add a key, add it to both.
type Config struct {
	// Sections lists the built-in sections that are on, in this order.
	// It is nil when the file does not say, and the caller picks the
	// default set; an empty list turns every section off.
	Sections []string `json:"sections"`
	// Planning holds the settings of the planning section.
	Planning Planning `json:"planning"`
	// Policies holds the server-wide tool call policies.
	Policies Policies `json:"policies"`
	// Deadline is the deadline of a single tool call; it is always > 0
	// after Parse. In the file it is a Go duration string such as "30s".
	Deadline time.Duration `json:"-"` // decoded through file.Deadline
	// Workspace says where the files the tools work on are kept.
	Workspace Workspace `json:"workspace"`
	// Hooks configures the lifecycle stages around every tool call.
	Hooks Hooks `json:"hooks"`
	// HTTP configures serving remote clients over Streamable HTTP and SSE.
	HTTP HTTP `json:"http"`

	name  string         // the file name given to Parse
	lines map[string]int // key path -> line
}

// Planning holds the settings of the planning section.
type Planning struct {
	// Strategy is one of react, plan_act_reflect and
	// goal_decompose_route_synthesise, or "" when the file does not say.
	Strategy string `json:"strategy"`
}

// Policies holds the server-wide tool call policies.
type Policies struct {
	// SequentialDependency maps a tool name to the tools that must have
	// succeeded before it may be called. Each list is non-empty and has
	// no duplicates.
	SequentialDependency map[string][]string `json:"sequential_dependency"`
	// ReadBeforeWrite says whether a file must have been read before it
	// may be overwritten. It defaults to true.
	ReadBeforeWrite bool `json:"read_before_write"`
}

// Workspace says where the files the tools work on are kept.
type Workspace struct {
	// Backend is "memory" (the default) or "disk".
	Backend string `json:"backend"`
	// Root is the directory of a disk workspace. It is set exactly when
	// Backend is "disk".
	Root string `json:"root"`
	// Mounts lists the host directories copied into the workspace.
	Mounts []Mount `json:"mounts"`
	// MaxBytes is the total number of bytes mounts may bring in,
	// 64 MiB by default.
	MaxBytes int64 `json:"max_bytes"`
	// AllowedRoots, when not empty, are the only host directories mounts
	// may read from.
	AllowedRoots []string `json:"allowed_roots"`
	// MaxFileBytes is the largest file the workspace tools write, read
	// or search, 32 MiB by default.
	MaxFileBytes int64 `json:"max_file_bytes"`
}

// HTTP configures the HTTP transports (Streamable HTTP at /mcp, SSE at
// /sse and /message). Command-line flags override these keys.
type HTTP struct {
	// Addr is the listen address ("127.0.0.1:8080"); "" serves stdio.
	Addr string `json:"addr"`
	// Insecure allows a non-loopback address without authentication.
	Insecure bool `json:"insecure"`
	// AllowedOrigins lists the browser origins allowed to call the server
	// ("*" for any); loopback origins are allowed on a loopback address.
	AllowedOrigins []string `json:"allowed_origins"`
	// AllowedHosts lists the Host names the server answers to besides
	// loopback names.
	AllowedHosts []string `json:"allowed_hosts"`
	// MaxBodyBytes bounds request bodies; 4 MiB by default.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// SessionTTL ends sessions idle for this long; 30m by default.
	SessionTTL Duration `json:"session_ttl"`
	// DrainTimeout bounds how long in-flight calls may run at shutdown;
	// 30s by default.
	DrainTimeout Duration `json:"drain_timeout"`
	// SSERetry is the reconnection delay announced on SSE streams; 1s by
	// default.
	SSERetry Duration `json:"sse_retry"`
	// BasePath is the path prefix a reverse proxy serves the server under.
	BasePath string `json:"base_path"`
	// PublicURL is the public URL of the /mcp endpoint, the resource named
	// in the OAuth protected-resource metadata.
	PublicURL string `json:"public_url"`
	// Auth says how clients authenticate.
	Auth HTTPAuth `json:"auth"`
}

// HTTPAuth says how HTTP clients authenticate: static bearer tokens, JWTs
// from an authorization server, or both.
type HTTPAuth struct {
	// BearerTokenFile holds static bearer tokens, one per line.
	BearerTokenFile string `json:"bearer_token_file"`
	// JWT configures validation of JWT access tokens; nil when off.
	JWT *JWT `json:"jwt"`
}

// JWT configures validation of JWT access tokens against the signing keys
// of an OAuth authorization server. It is on when JWKSURL is set.
type JWT struct {
	JWKSURL  string   `json:"jwks_url"`
	Issuer   string   `json:"issuer"`
	Audience string   `json:"audience"`
	Scopes   []string `json:"scopes"`
}

// Duration is a time.Duration written in the file as a Go duration string
// such as "30s" or "1m30s".
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Mount is a host directory copied into the workspace.
type Mount struct {
	// Host is the directory on the host; it is never empty.
	Host string `json:"host"`
	// Path is where the directory appears in the workspace; "" means the
	// workspace root.
	Path string `json:"path"`
	// Include lists glob patterns of the files to copy; nil means all
	// files. Parse checks each pattern's syntax with path.Match.
	Include []string `json:"include"`
	// Exclude lists glob patterns of files not to copy, even if included.
	Exclude []string `json:"exclude"`
	// FollowSymlinks copies what symbolic links point to (within the
	// allowed roots) instead of skipping them.
	FollowSymlinks bool `json:"follow_symlinks"`
}

// Default values of the keys that have one. They match the "default"
// annotations in schema.json.
const (
	defaultDeadline = 30 * time.Second
	defaultMaxBytes = 64 << 20
	// defaultMaxFileBytes is the default of workspace.max_file_bytes.
	defaultMaxFileBytes = 32 << 20
	defaultMaxBodyBytes = 4 << 20
	defaultSessionTTL   = 30 * time.Minute
	defaultDrainTimeout = 30 * time.Second
	defaultSSERetry     = time.Second
)

// Default returns the configuration used when no file is given.
func Default() *Config {
	return &Config{
		Policies:  Policies{ReadBeforeWrite: true},
		Deadline:  defaultDeadline,
		Workspace: Workspace{Backend: "memory", MaxBytes: defaultMaxBytes, MaxFileBytes: defaultMaxFileBytes},
		Hooks:     defaultHooks(),
		HTTP: HTTP{
			MaxBodyBytes: defaultMaxBodyBytes,
			SessionTTL:   Duration(defaultSessionTTL),
			DrainTimeout: Duration(defaultDrainTimeout),
			SSERetry:     Duration(defaultSSERetry),
		},
	}
}

// Load reads, validates and decodes the configuration file at path. Errors
// about the content are a *KeyError or, when there are several, Errors;
// they name the file, the key and its line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse validates and decodes a configuration file held in data. The name
// is used as the file name in error messages. An empty file, or one with
// only comments, is the default configuration.
func Parse(name string, data []byte) (*Config, error) {
	t, err := parseTree(name, data)
	if err != nil {
		return nil, err
	}
	c := Default()
	c.name, c.lines = name, t.lines
	if t.root == nil {
		return c, nil
	}
	errs, err := t.validate()
	if err != nil {
		return nil, err
	}
	for _, check := range checks {
		errs = append(errs, check(t)...)
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	if err := t.decode(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Line returns the line of the key in the parsed file, or 0 if the key is
// not in the file. Keys are written as in KeyError, for example
// "planning.strategy", "workspace.mounts[0].host" or
// "policies.sequential_dependency.deploy[1]"; a key that is empty or holds
// dots, brackets, quotes or spaces is written quoted in brackets, as in
// `policies.sequential_dependency["a.b"]`.
func (c *Config) Line(key string) int {
	return c.lines[key]
}

// Errorf returns a KeyError about key in the file c was parsed from, with
// the key's line, for checks done after parsing.
func (c *Config) Errorf(key, format string, args ...any) *KeyError {
	return &KeyError{File: c.name, Key: key, Line: c.Line(key), Msg: fmt.Sprintf(format, args...)}
}

// file is what the configuration file decodes into: the fields of Config,
// except that the deadline is still the string the file holds.
type file struct {
	*Config
	Deadline string `json:"deadline"`
}

// decode stores the values of a validated tree in c, leaving the defaults
// of the keys the tree does not have.
func (t *tree) decode(c *Config) error {
	data, err := json.Marshal(t.root)
	if err != nil {
		return fmt.Errorf("config: %s: %w", t.file, err)
	}
	f := file{Config: c}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // catches a key in schema.json but not in Config
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &KeyError{File: t.file, Key: te.Field, Line: t.lines[te.Field], Msg: fmt.Sprintf("cannot use %s here", te.Value)}
		}
		return fmt.Errorf("config: %s: %w", t.file, err)
	}
	if f.Deadline != "" {
		d, err := time.ParseDuration(f.Deadline)
		if err != nil { // checked by checkDeadline already
			return fmt.Errorf("config: %s: deadline: %w", t.file, err)
		}
		c.Deadline = d
	}
	return nil
}

// checks are the rules schema.json cannot express. They run after schema
// validation, even when it failed, so each must look only at values of the
// type it expects.
var checks = []func(*tree) []*KeyError{
	checkDeadline,
	checkGlobs,
	checkDefs,
	checkHTTPDurations,
}

// checkHTTPDurations checks that the durations under http are Go durations
// greater than zero.
func checkHTTPDurations(t *tree) []*KeyError {
	var errs []*KeyError
	for _, key := range []string{"session_ttl", "drain_timeout", "sse_retry"} {
		s, ok := get(t.root, "http", key).(string)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			errs = append(errs, t.keyError([]any{"http", key}, "invalid duration %q (use a Go duration such as \"30s\" or \"1m30s\")", s))
		case d <= 0:
			errs = append(errs, t.keyError([]any{"http", key}, "must be greater than 0, got %q", s))
		}
	}
	return errs
}

// checkDeadline checks that deadline is a Go duration greater than zero.
func checkDeadline(t *tree) []*KeyError {
	s, ok := get(t.root, "deadline").(string)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return []*KeyError{t.keyError([]any{"deadline"}, "invalid duration %q (use a Go duration such as \"30s\" or \"1m30s\")", s)}
	case d <= 0:
		return []*KeyError{t.keyError([]any{"deadline"}, "must be greater than 0, got %q", s)}
	}
	return nil
}

// checkGlobs checks the syntax of the include and exclude patterns of mounts.
func checkGlobs(t *tree) []*KeyError {
	var errs []*KeyError
	mounts, _ := get(t.root, "workspace", "mounts").([]any)
	for i := range mounts {
		for _, key := range []string{"include", "exclude"} {
			globs, _ := get(mounts[i], key).([]any)
			for j, g := range globs {
				s, ok := g.(string)
				if !ok {
					continue
				}
				if _, err := path.Match(s, ""); err != nil {
					errs = append(errs, t.keyError([]any{"workspace", "mounts", i, key, j}, "invalid glob pattern %q", s))
				}
			}
		}
	}
	return errs
}

// keyError returns a KeyError at path with the path's line.
func (t *tree) keyError(path []any, format string, args ...any) *KeyError {
	k := formatPath(path)
	return &KeyError{File: t.file, Key: k, Line: t.lines[k], Msg: fmt.Sprintf(format, args...)}
}
