package config

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
)

// Hooks configures the lifecycle stages that run around every tool call
// (package hooks): server-wide settings, and per-tool ones under Tools.
type Hooks struct {
	Authorise   Authorise   `json:"authorise"`
	RateLimit   RateLimit   `json:"rate_limit"`
	Concurrency Concurrency `json:"concurrency"`
	Cache       Cache       `json:"cache"`
	Retry       Retry       `json:"retry"`
	Output      Output      `json:"output"`
	Audit       Audit       `json:"audit"`
	Metrics     Metrics     `json:"metrics"`
	// Secrets maps a name to where the secret's value comes from.
	Secrets map[string]Secret `json:"secrets"`
	// Tools maps a tool name to its own settings.
	Tools map[string]ToolHooks `json:"tools"`
}

// Secret says where a secret's value comes from: an environment variable
// or a file. Exactly one is set (checked when the server is built).
type Secret struct {
	Env  string `json:"env"`
	File string `json:"file"`
}

// ToolInput says how one tool's arguments are normalised.
type ToolInput struct {
	Trim bool `json:"trim"`
}

// Authorise lists who may call tools: principals "*", "subject:NAME" or
// "scope:NAME".
type Authorise struct {
	// Allow is nil when the file does not say (everyone may call); it is
	// never empty.
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// RateLimit limits the calls of each session.
type RateLimit struct {
	Rate    float64  `json:"rate"`  // calls per second; 0 means no limit
	Burst   int      `json:"burst"` // 0 means the rate rounded up
	Quota   int64    `json:"quota"` // successful calls; 0 means no quota
	MaxWait Duration `json:"max_wait"`
}

// ToolRateLimit limits the calls of one tool in each session.
type ToolRateLimit struct {
	Rate  float64 `json:"rate"`
	Burst int     `json:"burst"`
	Quota int64   `json:"quota"`
}

// Concurrency bounds the calls in flight; 0 means no limit.
type Concurrency struct {
	MaxInFlight int `json:"max_in_flight"`
}

// Cache configures the per-session result cache.
type Cache struct {
	Enabled    bool     `json:"enabled"`
	MaxEntries int      `json:"max_entries"`
	TTL        Duration `json:"ttl"`
}

// ToolCache turns the cache on or off for one tool.
type ToolCache struct {
	Enabled *bool `json:"enabled"`
}

// Retry configures retries on transient errors.
type Retry struct {
	Enabled     bool     `json:"enabled"`
	MaxAttempts int      `json:"max_attempts"`
	BaseDelay   Duration `json:"base_delay"`
	MaxDelay    Duration `json:"max_delay"`
}

// ToolRetry overrides the retry settings for one tool; nil fields inherit.
type ToolRetry struct {
	Enabled     *bool     `json:"enabled"`
	MaxAttempts *int      `json:"max_attempts"`
	BaseDelay   *Duration `json:"base_delay"`
	MaxDelay    *Duration `json:"max_delay"`
}

// Output configures redaction, output schema checks and the text cap.
type Output struct {
	Redact       []string `json:"redact"`
	Validate     bool     `json:"validate"`
	MaxTextBytes int      `json:"max_text_bytes"`
}

// ToolOutput adds redaction patterns and overrides the output settings for
// one tool; nil fields inherit.
type ToolOutput struct {
	Redact       []string `json:"redact"`
	Validate     *bool    `json:"validate"`
	MaxTextBytes *int     `json:"max_text_bytes"`
}

// Audit configures the audit sinks.
type Audit struct {
	Log   bool   `json:"log"`
	File  string `json:"file"`
	Fsync string `json:"fsync"` // always, interval or never
}

// Metrics turns the Prometheus metrics on or off.
type Metrics struct {
	Enabled bool `json:"enabled"`
}

// ToolHooks holds one tool's settings; nil fields inherit the server-wide
// ones.
type ToolHooks struct {
	Input       *ToolInput     `json:"input"`
	Authorise   *Authorise     `json:"authorise"`
	RateLimit   *ToolRateLimit `json:"rate_limit"`
	Concurrency *Concurrency   `json:"concurrency"`
	Cache       *ToolCache     `json:"cache"`
	Retry       *ToolRetry     `json:"retry"`
	Output      *ToolOutput    `json:"output"`
}

// Defaults of the hooks keys; they match the "default" annotations in
// schema.json.
const (
	defaultMaxInFlight  = 64
	defaultMaxEntries   = 256
	defaultMaxAttempts  = 3
	defaultBaseDelay    = 100 * time.Millisecond
	defaultMaxDelay     = 2 * time.Second
	defaultMaxTextBytes = 100 << 10
)

func defaultHooks() Hooks {
	return Hooks{
		Concurrency: Concurrency{MaxInFlight: defaultMaxInFlight},
		Cache:       Cache{MaxEntries: defaultMaxEntries},
		Retry:       Retry{MaxAttempts: defaultMaxAttempts, BaseDelay: Duration(defaultBaseDelay), MaxDelay: Duration(defaultMaxDelay)},
		Output:      Output{MaxTextBytes: defaultMaxTextBytes},
		Audit:       Audit{Log: true, Fsync: "interval"},
		Metrics:     Metrics{Enabled: true},
	}
}

// defChecks check values whose schema is one of these $defs, for the rules
// the schema cannot express.
var defChecks = map[string]func(t *tree, path []any, v any) *KeyError{
	"duration":  checkDurationValue,
	"regexp":    checkRegexpValue,
	"principal": checkPrincipalValue,
}

// checkDurationValue checks a Go duration that must not be negative.
func checkDurationValue(t *tree, path []any, v any) *KeyError {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return t.keyError(path, "invalid duration %q (use a Go duration such as \"100ms\" or \"1m30s\")", s)
	case d < 0:
		return t.keyError(path, "must not be negative, got %q", s)
	}
	return nil
}

// checkRegexpValue checks a regular expression in RE2 syntax.
func checkRegexpValue(t *tree, path []any, v any) *KeyError {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code)
		}
		return t.keyError(path, "invalid regular expression %q: %s", s, msg)
	}
	if re.MatchString("") {
		return t.keyError(path, "regular expression %q matches the empty string", s)
	}
	return nil
}

// checkPrincipalValue checks an entry of an allow or deny list.
func checkPrincipalValue(t *tree, path []any, v any) *KeyError {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	if s == "*" {
		return nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if ok && (kind == "subject" || kind == "scope") && name != "" && strings.TrimSpace(name) == name {
		return nil
	}
	return t.keyError(path, "invalid principal %q (want \"*\", \"subject:NAME\" or \"scope:NAME\")", s)
}

// checkDefs walks the tree along the schema and runs defChecks on every
// value whose schema refers to one of their $defs.
func checkDefs(t *tree) []*KeyError {
	cs, err := loadSchema()
	if err != nil {
		return nil
	}
	var errs []*KeyError
	var walk func(s any, v any, path []any)
	walk = func(s any, v any, path []any) {
		m, _ := s.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			if check, ok := defChecks[name]; ok {
				if e := check(t, path, v); e != nil {
					errs = append(errs, e)
				}
				return
			}
			s, _ = lookup(cs.doc, splitPointer(strings.TrimPrefix(ref, "#")))
			m, _ = s.(map[string]any)
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := m["properties"].(map[string]any)
			for k, x := range v {
				p := append(path[:len(path):len(path)], k)
				if ps, ok := props[k]; ok {
					walk(ps, x, p)
				} else if ap, ok := m["additionalProperties"].(map[string]any); ok {
					walk(ap, x, p)
				}
			}
		case []any:
			for i, x := range v {
				walk(m["items"], x, append(path[:len(path):len(path)], i))
			}
		}
	}
	walk(cs.doc, t.root, nil)
	return errs
}

// Key renders a path of map keys and list indexes as the keys of KeyError
// are written, such as hooks.tools.read_file.cache.enabled, quoting a key
// that holds dots or other special characters.
func Key(path ...any) string {
	return formatPath(path)
}

var _ = fmt.Sprint
