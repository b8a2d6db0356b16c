package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/evaluation"
	"github.com/wink-mcp/wink-mcp/hooks"
	"github.com/wink-mcp/wink-mcp/planning"
)

// Config is the server's configuration. Default returns the configuration
// used when there is no file; Parse and Load start from it and override
// the keys the file sets.
//
// Each field is one key of the file: its json tag names the key, its
// jsonschema tag describes it, and its schema tag holds the JSON Schema
// keywords that constrain it (see the package documentation). The file's
// hooks section is hooks.Config itself.
type Config struct {
	// Sections is nil when the file does not say, and the caller picks the
	// default set; an empty list turns every section off.
	Sections   []string       `json:"sections" jsonschema:"The built-in sections that are on, in the order they are offered. When absent, the server's default set is used; an empty list turns every section off." schema:"uniqueItems,minLength=1"`
	Planning   Planning       `json:"planning" jsonschema:"Settings of the planning section."`
	History    History        `json:"history" jsonschema:"Settings of the history section: undo, checkpoints and the session's history."`
	Policies   Policies       `json:"policies" jsonschema:"Server-wide rules about the order and kind of tool calls."`
	Deadline   time.Duration  `json:"deadline" jsonschema:"The deadline of a single tool call; greater than zero." schema:"format=positive-go-duration"`
	Workspace  Workspace      `json:"workspace" jsonschema:"Where the files the tools work on are kept."`
	Evaluation Evaluation     `json:"evaluation" jsonschema:"Settings of the evaluation section: evaluate runs Starlark snippets against the workspace."`
	StateDir   string         `json:"state_dir" jsonschema:"The directory of the server's own state: the locks and undo journals of the calls in flight on a disk workspace, shared by every process working on the same directory. Default: the user's state directory, $XDG_STATE_HOME/wink-mcp or ~/.local/state/wink-mcp (macOS: ~/Library/Application Support/wink-mcp; Windows: %LocalAppData%\\wink-mcp)." schema:"minLength=1"`
	Store      string         `json:"store" jsonschema:"Where sessions are kept: embedded (the default: a NATS server in the process that stores under state_dir/store, so that sessions survive a restart), memory (in the process only: nothing survives its exit) or nats://HOST:PORT[,...] or tls://HOST:PORT[,...] (an external NATS cluster with JetStream, for several replicas)." schema:"minLength=1"`
	StoreSync  StoreSync      `json:"store_sync" jsonschema:"When the embedded store writes to disk: interval (every 2 minutes: a killed process loses nothing, a power loss may lose what was acknowledged since the last flush) or always (every commit is on disk before its call is answered, several times slower). An external cluster has its own setting."`
	NATS       NATS           `json:"nats" jsonschema:"How to connect to an external NATS cluster (store: nats://... or tls://...)."`
	Hooks      hooks.Config   `json:"hooks" jsonschema:"The lifecycle stages around every tool call. Off by default except metrics, audit to the log, the output cap and the server-wide concurrency limit."`
	HTTP       HTTP           `json:"http" jsonschema:"Serving remote clients over Streamable HTTP (/mcp) and the legacy SSE transport (/sse and /message). Command-line flags override these keys."`
	Consent    consent.Config `json:"consent" jsonschema:"Asking the user, through the client, before the calls of some tools run (elicitation). Off by default."`

	// StoreDormancy is 0 to keep the embedded store's server running.
	StoreDormancy time.Duration `json:"store_dormancy" jsonschema:"How long the embedded store's server runs in its process once nothing has used the store (no call, no other process connected); then it stops, and the process sleeps, until the next call starts it again, which that call waits for (about 10 ms; 0.1 s for a store of 400 MB). 0 keeps it running. Only for the embedded store."`

	name  string         // the file name given to Parse
	lines map[string]int // key path -> line
}

// Planning holds the settings of the planning section.
type Planning struct {
	// Strategy is "" when the file does not say.
	Strategy planning.Strategy `json:"strategy" jsonschema:"The planning strategy the server suggests to the model."`
	Open     bool              `json:"open" jsonschema:"Whether the planning section starts open. When false, the instructions hold only its first paragraph and its tools are listed to a session once it calls open_section."`
}

// History holds the settings of the history section.
type History struct {
	Retention int `json:"retention" jsonschema:"How many of its last commits, and of its checkpoints, each session keeps for session_undo and session_restore; at least 1." schema:"minimum=1"`
}

// Policies holds the server-wide tool call policies.
type Policies struct {
	SequentialDependency map[string][]string `json:"sequential_dependency" jsonschema:"Maps a tool name to the tools that must have succeeded before it may be called." schema:"minItems=1,uniqueItems,minLength=1"`
	ReadBeforeWrite      bool                `json:"read_before_write" jsonschema:"Whether a file must have been read before it may be overwritten."`
}

// Workspace says where the files the tools work on are kept.
type Workspace struct {
	Backend        Backend  `json:"backend" jsonschema:"The storage of the workspace: memory keeps files in the server process, disk keeps them under root."`
	Root           string   `json:"root" jsonschema:"The directory that holds the workspace. Required when backend is disk, not allowed otherwise." schema:"minLength=1"`
	Mounts         []Mount  `json:"mounts" jsonschema:"Host directories copied into the workspace."`
	MaxBytes       int64    `json:"max_bytes" jsonschema:"The total number of bytes that mounts may bring into the workspace." schema:"minimum=0"`
	AllowedRoots   []string `json:"allowed_roots" jsonschema:"When set, the only host directories mounts may read from: each mount's directory, symbolic links resolved, must lie under one of them." schema:"uniqueItems,minLength=1"`
	MaxFileBytes   int64    `json:"max_file_bytes" jsonschema:"The largest file, in bytes, that the workspace tools write, read or search." schema:"minimum=1"`
	IncludeIgnored bool     `json:"include_ignored" jsonschema:"Whether mounts, ls, glob and grep see .git and the paths .gitignore files ignore; by default they leave them out."`
	Open           bool     `json:"open" jsonschema:"Whether the workspace section starts open. When false, the instructions hold only its first paragraph and its tools are listed to a session once it calls open_section."`
}

// Evaluation holds the settings of the evaluation section.
type Evaluation struct {
	Isolate        bool       `json:"isolate" jsonschema:"Run every Starlark snippet in a child process under an address-space limit, over stdio too; over HTTP they always run so. In process, a snippet's memory is not capped."`
	MaxSteps       int64      `json:"max_steps" jsonschema:"The most steps of the Starlark interpreter one snippet may take." schema:"minimum=1"`
	MaxOutputBytes int64      `json:"max_output_bytes" jsonschema:"The most bytes of printed output a snippet returns; more is cut." schema:"minimum=1"`
	MaxMemoryBytes int64      `json:"max_memory_bytes" jsonschema:"How many bytes the address space of a snippet's child process may grow past what it maps when it starts." schema:"minimum=1"`
	RunCommand     RunCommand `json:"run_command" jsonschema:"The run_command tool: a shell command run under bubblewrap (Linux) on a copy of the workspace. Off by default; when on and bubblewrap cannot run, the server does not start."`
}

// RunCommand holds the settings of the run_command tool.
type RunCommand struct {
	Enabled     bool  `json:"enabled" jsonschema:"Offer run_command."`
	CPUSeconds  int   `json:"cpu_seconds" jsonschema:"The CPU time each process of a command may use, in seconds." schema:"minimum=1"`
	MemoryBytes int64 `json:"memory_bytes" jsonschema:"The address space each process of a command may use, in bytes." schema:"minimum=1"`
	Processes   int   `json:"processes" jsonschema:"How many processes the user a command runs as may have at once (nobody when the server runs as root)." schema:"minimum=1"`
}

// StoreSync says when the embedded store writes to disk; "" is interval.
type StoreSync string

// Enum lists the settings.
func (StoreSync) Enum() []string { return []string{"interval", "always"} }

// NATS says how to connect to an external NATS cluster.
type NATS struct {
	Creds    string `json:"creds" jsonschema:"A NATS credentials file (a user JWT and its NKey seed)." schema:"minLength=1"`
	CA       string `json:"ca" jsonschema:"A PEM file of the authorities that sign the servers' certificates; the connection then uses TLS." schema:"minLength=1"`
	Cert     string `json:"cert" jsonschema:"A PEM client certificate, for servers that verify clients; needs key." schema:"minLength=1"`
	Key      string `json:"key" jsonschema:"The PEM private key of cert." schema:"minLength=1"`
	Replicas int    `json:"replicas" jsonschema:"On how many servers each of the store's streams is kept: 3 survives the loss of one server." schema:"minimum=1,maximum=5"`
}

// Backend is the storage of the workspace.
type Backend string

// Enum lists the backends.
func (Backend) Enum() []string { return []string{"memory", "disk"} }

// Mount is a host directory copied into the workspace.
type Mount struct {
	Host           string   `json:"host" jsonschema:"The directory on the host to copy from." schema:"required,minLength=1"`
	Path           string   `json:"path" jsonschema:"Where the directory appears in the workspace; the workspace root when absent."`
	Include        []string `json:"include" jsonschema:"Only files matching one of these patterns (*, ? and [...] wildcards, matched against slash-separated paths) are copied; all files when absent." schema:"minLength=1,format=glob"`
	Exclude        []string `json:"exclude" jsonschema:"Files and directories matching one of these patterns are not copied, even when included." schema:"minLength=1,format=glob"`
	FollowSymlinks bool     `json:"follow_symlinks" jsonschema:"Copy what symbolic links point to, as long as it stays within the allowed roots (or the mount's directory); otherwise links are skipped."`
}

// HTTP configures the HTTP transports (Streamable HTTP at /mcp, SSE at
// /sse and /message).
type HTTP struct {
	// Addr is "" to serve stdio.
	Addr           string        `json:"addr" jsonschema:"The address to listen on, such as 127.0.0.1:8080. When absent the server speaks stdio." schema:"minLength=1"`
	Insecure       bool          `json:"insecure" jsonschema:"Allow a non-loopback address without authentication; logged as a warning."`
	AllowedOrigins []string      `json:"allowed_origins" jsonschema:"Browser origins allowed to call the server, such as https://app.example; * allows any. Loopback origins are always allowed on a loopback address." schema:"uniqueItems,minLength=1"`
	AllowedHosts   []string      `json:"allowed_hosts" jsonschema:"Host header names the server answers to besides loopback names (DNS-rebinding protection)." schema:"uniqueItems,minLength=1"`
	MaxBodyBytes   int64         `json:"max_body_bytes" jsonschema:"The largest request body accepted; larger ones get 413." schema:"minimum=1"`
	SessionTTL     time.Duration `json:"session_ttl" jsonschema:"Sessions idle for this long end, with everything stored for them; greater than zero. A stream left open counts as idle once it has carried no message and the session no request for this long: it is closed. Over stdio, when neither this key nor --session-ttl is given, 720h (30 days), so that the session a desktop client names with --session outlives a night with the app closed." schema:"format=positive-go-duration"`
	DrainTimeout   time.Duration `json:"drain_timeout" jsonschema:"At shutdown, how long in-flight calls may run before they are cancelled; greater than zero." schema:"format=positive-go-duration"`
	ReadTimeout    time.Duration `json:"read_timeout" jsonschema:"How long a client may take to send a whole request, headers and body; a slower body gets 408 and the connection is closed. Response streams are not bounded by it. Greater than zero." schema:"format=positive-go-duration"`
	IdleTimeout    time.Duration `json:"idle_timeout" jsonschema:"How long a keep-alive connection may wait for its next request before it is closed; greater than zero." schema:"format=positive-go-duration"`
	MaxConnections int           `json:"max_connections" jsonschema:"The most connections open at once; further clients wait until one closes." schema:"minimum=1"`
	// MaxSessionsPerPrincipal is 0 for no bound.
	MaxSessionsPerPrincipal int           `json:"max_sessions_per_principal" jsonschema:"The most sessions one client identity (a bearer token's subject; everyone alike without authentication) holds live in this process; a call that would start one more gets an error result saying how to continue one. 0 means no bound." schema:"minimum=0"`
	SSERetry                time.Duration `json:"sse_retry" jsonschema:"The reconnection delay announced on SSE response streams; greater than zero." schema:"format=positive-go-duration"`
	BasePath                string        `json:"base_path" jsonschema:"The path prefix under which a reverse proxy serves the server, such as /wink; used in the endpoint the SSE transport announces."`
	PublicURL               string        `json:"public_url" jsonschema:"The public URL of the /mcp endpoint, named as the resource in the OAuth protected-resource metadata; derived from each request when absent." schema:"minLength=1"`
	RequestStateKeyFile     string        `json:"request_state_key_file" jsonschema:"A file holding the secret (32 bytes or more; surrounding whitespace is dropped) that signs the requestState of a call that asks a client of the 2026-07-28 era for input (elicitation, sampling), so that the client may retry it on any replica that shares the file. When absent, each process signs with a random key of its own, and a retry must come back to the process, and before it restarts." schema:"minLength=1"`
	Auth                    HTTPAuth      `json:"auth" jsonschema:"How clients authenticate. With neither key, requests are not authenticated, which a non-loopback address allows only with insecure."`
}

// HTTPAuth says how HTTP clients authenticate: static bearer tokens, JWTs
// from an authorization server, or both.
type HTTPAuth struct {
	BearerTokenFile string `json:"bearer_token_file" jsonschema:"A file of static bearer tokens, one per line; blank lines and lines starting with # are ignored." schema:"minLength=1"`
	// JWT is nil when off.
	JWT *JWT `json:"jwt" jsonschema:"Validation of JWT access tokens issued by an OAuth authorization server."`
}

// JWT configures validation of JWT access tokens against the signing keys
// of an OAuth authorization server.
type JWT struct {
	JWKSURL  string   `json:"jwks_url" jsonschema:"The URL of the authorization server's JSON Web Key Set." schema:"required,minLength=1"`
	Issuer   string   `json:"issuer" jsonschema:"The required iss claim: the authorization server." schema:"required,minLength=1"`
	Audience string   `json:"audience" jsonschema:"The required aud claim: this server." schema:"required,minLength=1"`
	Scopes   []string `json:"scopes" jsonschema:"Scopes listed as supported in the protected-resource metadata." schema:"minLength=1"`
}

// Default returns the configuration used when no file is given. The
// defaults the schema states are read from it.
func Default() *Config {
	return &Config{
		Planning:  Planning{Open: true},
		History:   History{Retention: 20},
		Policies:  Policies{ReadBeforeWrite: true},
		Deadline:  30 * time.Second,
		Workspace: Workspace{Backend: "memory", MaxBytes: 64 << 20, MaxFileBytes: 32 << 20, Open: true},
		Evaluation: Evaluation{
			MaxSteps:       evaluation.DefaultMaxSteps,
			MaxOutputBytes: evaluation.DefaultMaxOutputBytes,
			MaxMemoryBytes: evaluation.DefaultMaxMemoryBytes,
			RunCommand:     RunCommand{CPUSeconds: evaluation.DefaultCPUSeconds, MemoryBytes: evaluation.DefaultCommandMemoryBytes, Processes: evaluation.DefaultProcesses},
		},
		NATS:    NATS{Replicas: 1},
		Hooks:   hooks.Defaults(),
		Consent: consent.Config{Fallback: consent.Deny},
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

		// The calls of one turn of a model come seconds apart and share
		// one start; a turn waits seconds for the model, beside which
		// the start of a dormant store is small.
		StoreDormancy: 30 * time.Second,
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
	s, err := loadSchema()
	if err != nil {
		return nil, err
	}
	errs, err := t.validate(s)
	if err != nil {
		return nil, err
	}
	errs = append(errs, t.checkFormats(s.doc)...)
	errs = append(errs, t.checkRoot()...)
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	if err := t.decode(s.doc, c); err != nil {
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

// decode stores the values of a validated tree in c, leaving the defaults
// of the keys the tree does not have. Durations, strings in the file, are
// decoded as the integers a time.Duration holds.
func (t *tree) decode(doc any, c *Config) error {
	root := mapFormats(doc, t.root, nil, func(format string, v any, _ []any) any {
		s, _ := v.(string)
		if d, err := time.ParseDuration(s); err == nil && (format == "go-duration" || format == "positive-go-duration") {
			return int64(d)
		}
		return v
	})
	data, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("config: %s: %w", t.file, err)
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(c); err != nil {
		// The schema holds every value to its field's type; what remains is
		// a number too large for it.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &KeyError{File: t.file, Key: te.Field, Line: t.lines[te.Field], Msg: te.Value + " is out of range"}
		}
		return fmt.Errorf("config: %s: %w", t.file, err)
	}
	return nil
}
