package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Config configures the lifecycle stages: the server-wide settings of each
// stage, the secrets, and per-tool settings under Tools. It is the hooks
// section of the configuration file as it stands: each setting's json tag
// names its key, its jsonschema tag describes it and its schema tag holds
// the JSON Schema keywords that constrain it (package config generates the
// file's schema from them). The zero Config turns every stage off;
// Defaults returns the server's defaults.
type Config struct {
	Authorise   AuthoriseConfig   `json:"authorise" jsonschema:"Who may call the tools, by the caller's identity (the bearer token's subject and scopes on HTTP, the local user on stdio). Tools a client may not call are hidden from its tools/list."`
	RateLimit   RateLimitConfig   `json:"rate_limit" jsonschema:"Token buckets (golang.org/x/time/rate) and quotas per session. A refused call is told when to retry."`
	Concurrency ConcurrencyConfig `json:"concurrency" jsonschema:"Calls in flight server-wide; a call waits for a slot until its deadline."`
	Cache       CacheConfig       `json:"cache" jsonschema:"A per-session cache of the results of tools annotated read-only and idempotent, emptied by any successful state-changing call of the session."`
	Retry       RetryConfig       `json:"retry" jsonschema:"Retries of tools annotated idempotent, on errors the tool marks transient, with exponential backoff and jitter within the call's deadline. Each attempt runs in its own transaction."`
	Output      OutputConfig      `json:"output" jsonschema:"What the model sees of a result."`
	Audit       AuditConfig       `json:"audit" jsonschema:"Where a record of every call goes (the arguments redacted)."`
	Metrics     MetricsConfig     `json:"metrics" jsonschema:"Prometheus metrics of the calls, served on /metrics in HTTP mode."`
	// Secrets are values handlers get with Secret, by name.
	Secrets map[string]SecretSource `json:"secrets" jsonschema:"Values tools get from the server, never through the model's arguments, by name: each from an environment variable or a file. Their values are redacted from what the model sees and from what is logged."`
	// Tools holds per-tool settings by tool name.
	Tools map[string]ToolConfig `json:"tools" jsonschema:"Settings of single tools, by tool name; absent keys take the server-wide values."`
	// DeadlineReminder configures the deadline_reminder stage.
	DeadlineReminder DeadlineConfig `json:"deadline_reminder" jsonschema:"A reminder, added to each result as a text block, of the time left to a deadline once it is near. Off unless a deadline is set."`
	// Stages place the stages by name (the built-in ones, see the package documentation, and Hooks).
	Stages map[string]StageConfig `json:"stages" jsonschema:"The stages by name (metrics, audit, cap_output, redact, validate_output, deadline_reminder, authorise, rate_limit, concurrency, cache, normalise, retry, plan_reminder): whether each runs, its priority within its slot of the pipeline and the tools it runs for."`
	// Flags turn stages and tools on or off per caller.
	Flags []FlagConfig `json:"flags" jsonschema:"Stages and tools turned on or off for some principals or sessions. For each stage and tool, the last flag that names it and matches the caller decides."`

	// Hooks are stages of the program's own, placed among the built-in
	// ones by slot and priority.
	Hooks []Hook `json:"-"`

	// Logger receives the audit log and the stages' own logs; nil means
	// slog.Default().
	Logger *slog.Logger `json:"-"`
	// Now is the clock of the token buckets, cache expiry and audit
	// records; nil means time.Now. (Deadlines are wall-clock times.)
	Now func() time.Time `json:"-"`
}

// ToolConfig holds the settings of one tool. Nil fields inherit the
// server-wide setting.
type ToolConfig struct {
	Input       *ToolInputConfig     `json:"input" jsonschema:"How this tool's arguments are normalised before validation."`
	Authorise   *AuthoriseConfig     `json:"authorise" jsonschema:"Who may call this tool: allow replaces the server-wide list, deny adds to it. Tools a client may not call are hidden from its tools/list."`
	RateLimit   *ToolRateLimitConfig `json:"rate_limit" jsonschema:"A token bucket and quota of this tool's own in each session, on top of the server-wide ones."`
	Concurrency *ConcurrencyConfig   `json:"concurrency" jsonschema:"Calls in flight of this tool, server-wide, on top of the server-wide limit; a call waits for a slot until its deadline."`
	Cache       *ToolCacheConfig     `json:"cache" jsonschema:"Whether this tool's results are cached; only a read-only, idempotent tool may turn it on."`
	Retry       *ToolRetryConfig     `json:"retry" jsonschema:"This tool's retry settings; only an idempotent tool may turn retries on. Absent keys take the server-wide values."`
	Output      *ToolOutputConfig    `json:"output" jsonschema:"What the model sees of this tool's results: redact adds to the server-wide patterns, the other keys replace the server-wide values."`
}

// OutputConfig configures the output stages: CapOutput, Redact and
// ValidateOutput.
type OutputConfig struct {
	Redact       []string `json:"redact" jsonschema:"Regular expressions (RE2 syntax) whose matches are replaced by [REDACTED] in what the model sees and in what is logged and audited." schema:"uniqueItems,format=regexp"`
	Validate     bool     `json:"validate" jsonschema:"Whether structured content is checked against the tool's output schema; a mismatch fails the call (a bug in the tool, logged)."`
	MaxTextBytes int      `json:"max_text_bytes" jsonschema:"The most bytes of text the model reads from one result; longer text is cut with a visible marker. 0 means no cap." schema:"minimum=0"`
}

// ToolOutputConfig adds redaction patterns and overrides the output
// settings for one tool.
type ToolOutputConfig struct {
	Redact       []string `json:"redact" jsonschema:"Regular expressions (RE2 syntax) whose matches are replaced by [REDACTED], added to the server-wide ones." schema:"uniqueItems,format=regexp"`
	Validate     *bool    `json:"validate" jsonschema:"Whether structured content is checked against the tool's output schema; a mismatch fails the call."`
	MaxTextBytes *int     `json:"max_text_bytes" jsonschema:"The most bytes of text the model reads from one result; 0 means no cap." schema:"minimum=0"`
}

// Default settings.
const (
	DefaultMaxInFlight  = 64
	DefaultMaxTextBytes = 100 << 10
	DefaultMaxEntries   = 256
	DefaultMaxAttempts  = 3
	DefaultBaseDelay    = 100 * time.Millisecond
	DefaultMaxDelay     = 2 * time.Second
	DefaultWithin       = 10 * time.Minute
)

// Defaults returns the server's default configuration: metrics on, audit
// to the log, the output cap at 100 KiB, at most 64 calls in flight
// server-wide, everything else off.
func Defaults() Config {
	return Config{
		Concurrency: ConcurrencyConfig{MaxInFlight: DefaultMaxInFlight},
		Cache:       CacheConfig{MaxEntries: DefaultMaxEntries},
		Retry:       RetryConfig{MaxAttempts: DefaultMaxAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay},
		Output:      OutputConfig{MaxTextBytes: DefaultMaxTextBytes},
		Audit:       AuditConfig{Log: true, Fsync: FsyncInterval},
		Metrics:     MetricsConfig{Enabled: true},

		DeadlineReminder: DeadlineConfig{Within: DefaultWithin},
	}
}

// Formats holds the checks of the string formats that settings name in
// their schema tags (format=NAME), for what a JSON Schema cannot say. Each
// returns what is wrong with a value, or "" when nothing is. New makes the
// same checks; package config runs these on the file, so that a problem is
// reported with its line, together with the file's other problems.
var Formats = map[string]func(string) string{
	"date-time": func(s string) string {
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Sprintf("invalid time %q (use RFC 3339, such as 2026-11-25T17:00:00Z)", s)
		}
		return ""
	},
	"principal": func(s string) string {
		_, why := parsePrincipal(s)
		return why
	},
	"regexp": func(s string) string {
		_, why := compilePattern(s)
		return why
	},
}

// ConfigError is a problem with one setting. Key is its path in the
// configuration's hooks group, as in "rate_limit.rate",
// "output.redact[1]" or "tools.read_file.cache.enabled".
type ConfigError struct {
	Key string
	Msg string
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Msg }

// ConfigErrors are the problems New found, in a stable order.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Hooks holds the lifecycle stages built from one Config. Each accessor
// returns its stage as one tools.Middleware, or nil when the configuration
// turns it off; the server skips nil stages.
type Hooks struct {
	cfg    Config
	logger *slog.Logger
	now    func() time.Time
	plans  map[string]*plan // by tool name

	// The server-wide settings, for tools New was not told about.
	allow, deny []principal
	patterns    []*regexp.Regexp

	authorise, rateLimit, cache, retry bool
	redact, validate, capText          bool
	normalise                          bool
	secrets                            secrets
	serverSem                          *semaphore.Weighted
	serverSemN                         int
	concurrency                        bool
	sessionQuota                       bool

	metrics *metrics
	audit   *auditor
	flags   flags
	hooks   []Hook // placed, in their order in the pipeline
}

// plan is what the stages do for one tool, resolved once by New.
type plan struct {
	allow, deny []principal
	allowed     bool // allow is not nil

	rate      RateLimitConfig
	toolRate  ToolRateLimitConfig
	toolSem   *semaphore.Weighted
	toolSemN  int
	trim      bool
	cacheable bool
	retry     RetryConfig
	retryable bool

	redactor  *Redactor
	validator *schema.Validator
	maxText   int
}

// New checks cfg against the tools the server offers and builds the
// stages. Problems are returned together as ConfigErrors, each naming its
// key: an unknown tool, a negative number, a bad regular expression or
// principal, caching or retrying a tool that may not be.
func New(cfg Config, ts []*tools.Tool) (*Hooks, error) {
	h := &Hooks{
		cfg:    cfg,
		logger: cfg.Logger,
		now:    cfg.Now,
		plans:  map[string]*plan{},
	}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	var errs ConfigErrors
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	h.cfg.Cache, h.cfg.Retry, h.cfg.Audit = cacheDefaults(cfg.Cache), retryDefaults(cfg.Retry), auditDefaults(cfg.Audit)
	checkServer(h.cfg, bad)
	checkHooks(h.cfg, bad)
	checkDeadline(h.cfg.DeadlineReminder, bad)
	h.flags = newFlags(cfg.Flags, ts, bad)

	h.allow, h.deny = principals("authorise.allow", cfg.Authorise.Allow, bad), principals("authorise.deny", cfg.Authorise.Deny, bad)
	h.patterns = compile("output.redact", cfg.Output.Redact, bad)
	h.secrets = loadSecrets(cfg.Secrets, bad)
	h.patterns = append(h.patterns, secretPatterns(h.secrets)...)

	known := map[string]*tools.Tool{}
	for _, t := range ts {
		known[t.Name()] = t
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		if known[name] == nil {
			bad("tools."+name, "unknown tool %q", name)
		}
	}
	for _, t := range ts {
		p, err := h.newPlan(t, cfg.Tools[t.Name()], h.allow, h.deny, h.patterns, bad)
		if err != nil {
			return nil, err
		}
		h.plans[t.Name()] = p
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *ConfigError) int { return strings.Compare(a.Key, b.Key) })
		return nil, errs
	}

	if n := cfg.Concurrency.MaxInFlight; n > 0 {
		h.serverSem, h.serverSemN, h.concurrency = semaphore.NewWeighted(int64(n)), n, true
	}
	h.sessionQuota = cfg.RateLimit.Quota > 0
	if cfg.Authorise.Allow != nil || len(cfg.Authorise.Deny) > 0 || len(h.flags.tools) > 0 {
		h.authorise = true
	}
	if cfg.RateLimit.Rate > 0 || cfg.RateLimit.Quota > 0 {
		h.rateLimit = true
	}
	for _, p := range h.plans {
		h.authorise = h.authorise || p.allowed || len(p.deny) > 0
		h.rateLimit = h.rateLimit || p.toolRate.Rate > 0 || p.toolRate.Quota > 0
		h.concurrency = h.concurrency || p.toolSem != nil
		h.cache = h.cache || p.cacheable
		h.retry = h.retry || p.retryable
		h.redact = h.redact || p.redactor != nil
		h.validate = h.validate || p.validator != nil
		h.capText = h.capText || p.maxText > 0
		h.normalise = h.normalise || p.trim
	}
	if cfg.Metrics.Enabled {
		h.metrics = newMetrics()
	}
	a, err := newAuditor(h.cfg.Audit, h.logger)
	if err != nil {
		return nil, ConfigErrors{{Key: "audit.file", Msg: err.Error()}}
	}
	h.audit = a
	h.hooks = h.placed(ts)
	return h, nil
}

func cacheDefaults(c CacheConfig) CacheConfig {
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	return c
}

func retryDefaults(r RetryConfig) RetryConfig {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.BaseDelay == 0 {
		r.BaseDelay = DefaultBaseDelay
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = max(DefaultMaxDelay, r.BaseDelay)
	}
	return r
}

func auditDefaults(a AuditConfig) AuditConfig {
	if a.Fsync == "" {
		a.Fsync = FsyncInterval
	}
	return a
}

// checkServer reports the server-wide settings out of range.
func checkServer(cfg Config, bad func(key, format string, args ...any)) {
	notNegative := func(key string, v float64) {
		if v < 0 {
			bad(key, "must not be negative, got %v", v)
		}
	}
	notNegative("rate_limit.rate", cfg.RateLimit.Rate)
	notNegative("rate_limit.burst", float64(cfg.RateLimit.Burst))
	notNegative("rate_limit.quota", float64(cfg.RateLimit.Quota))
	notNegativeD := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, "must not be negative, got %s", d)
		}
	}
	notNegativeD("rate_limit.max_wait", cfg.RateLimit.MaxWait)
	notNegative("concurrency.max_in_flight", float64(cfg.Concurrency.MaxInFlight))
	notNegative("cache.max_entries", float64(cfg.Cache.MaxEntries))
	notNegativeD("cache.ttl", cfg.Cache.TTL)
	notNegative("retry.max_attempts", float64(cfg.Retry.MaxAttempts))
	notNegativeD("retry.base_delay", cfg.Retry.BaseDelay)
	notNegativeD("retry.max_delay", cfg.Retry.MaxDelay)
	notNegative("output.max_text_bytes", float64(cfg.Output.MaxTextBytes))
	if cfg.Retry.MaxDelay < cfg.Retry.BaseDelay {
		bad("retry.max_delay", "must not be less than base_delay (%s)", cfg.Retry.BaseDelay)
	}
	switch cfg.Audit.Fsync {
	case FsyncAlways, FsyncInterval, FsyncNever:
	default:
		bad("audit.fsync", "must be one of: always, interval, never")
	}
}

// newPlan resolves what the stages do for t.
func (h *Hooks) newPlan(t *tools.Tool, tc ToolConfig, allow, deny []principal, serverPatterns []*regexp.Regexp, bad func(key, format string, args ...any)) (*plan, error) {
	key := "tools." + t.Name() + "."
	ann := t.Annotations()
	p := &plan{
		allow:   allow,
		allowed: h.cfg.Authorise.Allow != nil,
		deny:    deny,
		rate:    h.cfg.RateLimit,
		retry:   h.cfg.Retry,
		maxText: h.cfg.Output.MaxTextBytes,
	}
	if in := tc.Input; in != nil {
		p.trim = in.Trim
	}
	if a := tc.Authorise; a != nil {
		if a.Allow != nil {
			p.allow, p.allowed = principals(key+"authorise.allow", a.Allow, bad), true
		}
		p.deny = append(slices.Clone(p.deny), principals(key+"authorise.deny", a.Deny, bad)...)
	}
	if r := tc.RateLimit; r != nil {
		for k, v := range map[string]float64{"rate": r.Rate, "burst": float64(r.Burst), "quota": float64(r.Quota)} {
			if v < 0 {
				bad(key+"rate_limit."+k, "must not be negative, got %v", v)
			}
		}
		p.toolRate = *r
	}
	if c := tc.Concurrency; c != nil {
		if c.MaxInFlight < 0 {
			bad(key+"concurrency.max_in_flight", "must not be negative, got %d", c.MaxInFlight)
		} else if c.MaxInFlight > 0 {
			p.toolSem, p.toolSemN = semaphore.NewWeighted(int64(c.MaxInFlight)), c.MaxInFlight
		}
	}
	eligible := ann.ReadOnly && ann.Idempotent
	p.cacheable = h.cfg.Cache.Enabled && eligible
	if c := tc.Cache; c != nil && c.Enabled != nil {
		if *c.Enabled && !eligible {
			bad(key+"cache.enabled", "tool %q is not annotated read-only and idempotent, so its results may not be cached", t.Name())
		}
		p.cacheable = *c.Enabled && eligible
	}
	p.retryable = h.cfg.Retry.Enabled && ann.Idempotent
	if r := tc.Retry; r != nil {
		if r.Enabled != nil {
			if *r.Enabled && !ann.Idempotent {
				bad(key+"retry.enabled", "tool %q is not annotated idempotent, so it may not be retried", t.Name())
			}
			p.retryable = *r.Enabled && ann.Idempotent
		}
		if r.MaxAttempts != nil {
			if *r.MaxAttempts < 1 {
				bad(key+"retry.max_attempts", "must be at least 1, got %d", *r.MaxAttempts)
			}
			p.retry.MaxAttempts = *r.MaxAttempts
		}
		if r.BaseDelay != nil {
			if *r.BaseDelay < 0 {
				bad(key+"retry.base_delay", "must not be negative, got %s", *r.BaseDelay)
			}
			p.retry.BaseDelay = *r.BaseDelay
		}
		if r.MaxDelay != nil {
			if *r.MaxDelay < 0 {
				bad(key+"retry.max_delay", "must not be negative, got %s", *r.MaxDelay)
			}
			p.retry.MaxDelay = *r.MaxDelay
		}
		if p.retry.MaxDelay < p.retry.BaseDelay {
			bad(key+"retry.max_delay", "must not be less than base_delay (%s)", p.retry.BaseDelay)
		}
	}
	p.retryable = p.retryable && p.retry.MaxAttempts > 1
	patterns := serverPatterns
	validate := h.cfg.Output.Validate
	if o := tc.Output; o != nil {
		patterns = append(slices.Clone(patterns), compile(key+"output.redact", o.Redact, bad)...)
		if o.Validate != nil {
			if *o.Validate && t.OutputSchema() == nil {
				bad(key+"output.validate", "tool %q has no output schema", t.Name())
			}
			validate = *o.Validate
		}
		if o.MaxTextBytes != nil {
			if *o.MaxTextBytes < 0 {
				bad(key+"output.max_text_bytes", "must not be negative, got %d", *o.MaxTextBytes)
			}
			p.maxText = *o.MaxTextBytes
		}
	}
	if len(patterns) > 0 {
		p.redactor = &Redactor{patterns: patterns}
	}
	if validate && t.OutputSchema() != nil {
		v, err := schema.Compile(t.OutputSchema())
		if err != nil {
			return nil, fmt.Errorf("hooks: output schema of tool %q: %w", t.Name(), err)
		}
		p.validator = v
	}
	return p, nil
}

// plan returns what the stages do for t. A tool New was not told about
// gets the server-wide settings.
func (h *Hooks) plan(t *tools.Tool) *plan {
	if p, ok := h.plans[t.Name()]; ok {
		return p
	}
	p, err := h.newPlan(t, ToolConfig{}, h.allow, h.deny, h.patterns, func(string, string, ...any) {})
	if err != nil {
		h.logger.Error("hooks: settings for an unknown tool", "tool", t.Name(), "err", err)
		return &plan{}
	}
	return p
}

// compile compiles the redaction patterns at key.
func compile(key string, exprs []string, bad func(key, format string, args ...any)) []*regexp.Regexp {
	var out []*regexp.Regexp
	for i, e := range exprs {
		re, why := compilePattern(e)
		if why != "" {
			bad(fmt.Sprintf("%s[%d]", key, i), "%s", why)
			continue
		}
		out = append(out, re)
	}
	return out
}

// compilePattern compiles a redaction pattern, or says what is wrong with
// it: a pattern must compile and must not match the empty string.
func compilePattern(expr string) (*regexp.Regexp, string) {
	re, err := regexp.Compile(expr)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code) // without the expression, quoted already
		}
		return nil, fmt.Sprintf("invalid regular expression %q: %s", expr, msg)
	}
	if re.MatchString("") {
		return nil, fmt.Sprintf("regular expression %q matches the empty string", expr)
	}
	return re, ""
}

// Visible reports whether the client of ctx may call t in the session
// named session ("" for none yet), for hiding the tools it may not from
// its tools/list (server.Options.ToolFilter): the allow and deny lists,
// and the flags of the client's principal and of the session.
func (h *Hooks) Visible(ctx context.Context, t *tools.Tool, session string) bool {
	if !h.authorise {
		return true
	}
	id, _ := identity.From(ctx)
	return h.refusal(t, caller{id: id, session: session}) == ""
}

// MetricsHandler serves the metrics in the Prometheus text format, for the
// HTTP transport to mount on /metrics. It is nil when metrics are off.
func (h *Hooks) MetricsHandler() http.Handler {
	if h.metrics == nil {
		return nil
	}
	return h.metrics.handler()
}

// Close writes the audit records still pending and closes the audit file,
// if any.
func (h *Hooks) Close() error {
	if h.audit != nil {
		return h.audit.close()
	}
	return nil
}
