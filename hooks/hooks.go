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

// Config configures the lifecycle stages. The zero Config turns every stage
// off; Defaults returns the server's defaults. Settings under Tools apply to
// one tool each, on top of (or instead of, where said) the server-wide ones.
type Config struct {
	Authorise   AuthoriseConfig
	RateLimit   RateLimitConfig
	Concurrency ConcurrencyConfig
	Cache       CacheConfig
	Retry       RetryConfig
	Output      OutputConfig
	Audit       AuditConfig
	Metrics     MetricsConfig
	// Tools holds per-tool settings by tool name.
	Tools map[string]ToolConfig
	// Secrets are values handlers get with Secret, by name.
	Secrets map[string]SecretSource

	// Logger receives the audit log and the stages' own logs; nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of the token buckets, cache expiry and audit
	// records; nil means time.Now. (Deadlines are wall-clock times.)
	Now func() time.Time
}

// AuthoriseConfig says who may call a tool. A principal is "*" (anyone,
// anonymous included), "subject:NAME" (the identity's subject) or
// "scope:NAME" (an identity granted that scope).
type AuthoriseConfig struct {
	// Allow lists the principals that may call; nil allows everyone.
	// Per tool, a non-nil Allow replaces the server-wide one.
	Allow []string
	// Deny lists principals refused even when allowed. Per tool, it adds
	// to the server-wide list.
	Deny []string
}

// RateLimitConfig limits how fast and how much a session calls.
type RateLimitConfig struct {
	// Rate is the sustained calls per second of one session (a token
	// bucket per session, shared by its tools); 0 means no limit.
	Rate float64
	// Burst is how many calls may come at once; 0 means Rate rounded up,
	// at least 1.
	Burst int
	// Quota is the number of successful calls a session may make; 0
	// means no quota. A call that fails, for any reason, gives its unit
	// back, as it gives back its state changes.
	Quota int64
	// MaxWait is how long a call may wait for a token (never past its
	// deadline) before it is refused with a retry-after; 0 refuses at
	// once.
	MaxWait time.Duration
}

// ToolRateLimitConfig limits one tool, per session, on top of the
// server-wide limits.
type ToolRateLimitConfig struct {
	Rate  float64
	Burst int
	Quota int64
}

// ConcurrencyConfig bounds the calls in flight.
type ConcurrencyConfig struct {
	// MaxInFlight is the number of calls in flight server-wide (per tool
	// in ToolConfig, on top); 0 means no limit. A call waits for a slot
	// until its deadline.
	MaxInFlight int
}

// CacheConfig configures the per-session result cache, which only ever
// holds results of tools annotated read-only and idempotent.
type CacheConfig struct {
	// Enabled turns the cache on for every read-only, idempotent tool.
	Enabled bool
	// MaxEntries bounds each session's cache (least recently used
	// entries go first); 0 means 256.
	MaxEntries int
	// TTL bounds how long an entry is served; 0 means until a
	// state-changing call of the session invalidates it.
	TTL time.Duration
}

// RetryConfig configures retries of idempotent tools on transient errors
// (see tools.Transient).
type RetryConfig struct {
	Enabled bool
	// MaxAttempts counts the first attempt too; 0 means 3.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; each further wait
	// doubles, up to MaxDelay, with jitter. 0 means 100ms and 2s.
	BaseDelay, MaxDelay time.Duration
}

// OutputConfig configures the output stages.
type OutputConfig struct {
	// Redact lists regular expressions (RE2 syntax) whose matches are
	// replaced by [REDACTED] in what the model sees and in what is
	// logged and audited. Per tool, the lists add up.
	Redact []string
	// Validate checks structured content against the tool's output
	// schema; a mismatch fails the call (a bug in the tool, logged).
	Validate bool
	// MaxTextBytes caps the text the model reads, with a visible marker;
	// 0 means no cap.
	MaxTextBytes int
}

// AuditConfig configures the audit sinks.
type AuditConfig struct {
	// Log writes a record of every call to the logger, at info level.
	Log bool
	// File, when set, appends every record to this JSON-lines file.
	File string
	// Fsync says when the file is synced to disk; "" means FsyncInterval.
	Fsync Fsync
}

// Fsync says when the audit file is synced to stable storage, and so what a
// crash loses. With FsyncAlways every record is written and synced before
// its call returns. Otherwise records are buffered and written once a
// second: a kill of the server loses the records of the last second at
// most, and fsync says what a crash of the machine loses.
type Fsync string

const (
	// FsyncAlways syncs after every record, before the call's result is
	// returned.
	FsyncAlways Fsync = "always"
	// FsyncInterval syncs once a second, when the buffer is written, if
	// records were written since the last sync, and on Close.
	FsyncInterval Fsync = "interval"
	// FsyncNever leaves syncing to the operating system (and Close).
	FsyncNever Fsync = "never"
)

// MetricsConfig configures the Prometheus metrics.
type MetricsConfig struct {
	Enabled bool
}

// ToolConfig holds the settings of one tool. Nil fields inherit the
// server-wide setting.
type ToolConfig struct {
	Input       *ToolInputConfig
	Authorise   *AuthoriseConfig
	RateLimit   *ToolRateLimitConfig
	Concurrency *ConcurrencyConfig
	Cache       *ToolCacheConfig
	Retry       *ToolRetryConfig
	Output      *ToolOutputConfig
}

// ToolInputConfig asks for the tool's arguments to be normalised before
// validation.
type ToolInputConfig struct {
	// Trim trims the white space around every string in the arguments.
	Trim bool
}

// ToolCacheConfig turns the cache on or off for one tool; only a read-only,
// idempotent tool may turn it on.
type ToolCacheConfig struct {
	Enabled *bool
}

// ToolRetryConfig overrides the retry settings for one tool; only an
// idempotent tool may turn retries on.
type ToolRetryConfig struct {
	Enabled             *bool
	MaxAttempts         *int
	BaseDelay, MaxDelay *time.Duration
}

// ToolOutputConfig adds redaction patterns and overrides the output
// settings for one tool.
type ToolOutputConfig struct {
	Redact       []string
	Validate     *bool
	MaxTextBytes *int
}

// Default settings.
const (
	DefaultMaxInFlight  = 64
	DefaultMaxTextBytes = 100 << 10
	DefaultMaxEntries   = 256
	DefaultMaxAttempts  = 3
	DefaultBaseDelay    = 100 * time.Millisecond
	DefaultMaxDelay     = 2 * time.Second
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
	}
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
	if cfg.Authorise.Allow != nil || len(cfg.Authorise.Deny) > 0 {
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

// compile compiles the regular expressions at key.
func compile(key string, exprs []string, bad func(key, format string, args ...any)) []*regexp.Regexp {
	var out []*regexp.Regexp
	for i, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			bad(fmt.Sprintf("%s[%d]", key, i), "invalid regular expression %q: %s", e, unwrapRegexpError(err))
			continue
		}
		if re.MatchString("") {
			bad(fmt.Sprintf("%s[%d]", key, i), "regular expression %q matches the empty string", e)
			continue
		}
		out = append(out, re)
	}
	return out
}

// unwrapRegexpError returns what is wrong with an expression, without the
// expression (the key's message quotes it already).
func unwrapRegexpError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

// Visible reports whether the client of ctx may call t, for hiding the
// tools it may not from its tools/list (server.Options.ToolFilter).
func (h *Hooks) Visible(ctx context.Context, t *tools.Tool) bool {
	if !h.authorise {
		return true
	}
	id, _ := identity.From(ctx)
	return h.plan(t).authorised(id) == ""
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

// Output returns the output stages for the server's output slot, outermost
// first: the cap (which runs last on the way out, so the marker is never
// redacted and the cap holds after redaction), redaction, then the output
// schema check. Stages that are off are left out.
func (h *Hooks) Output() []tools.Middleware {
	var out []tools.Middleware
	for _, mw := range []tools.Middleware{h.CapOutput(), h.Redact(), h.ValidateOutput()} {
		if mw != nil {
			out = append(out, mw)
		}
	}
	return out
}

// Stages returns the stages that are on, by the pipeline slot each
// belongs in, for server.Options.Stages.
func (h *Hooks) Stages() map[tools.Slot][]tools.Middleware {
	out := map[tools.Slot][]tools.Middleware{}
	add := func(slot tools.Slot, mws ...tools.Middleware) {
		for _, mw := range mws {
			if mw != nil {
				out[slot] = append(out[slot], mw)
			}
		}
	}
	add(tools.SlotMetrics, h.Metrics())
	add(tools.SlotAudit, h.Audit())
	add(tools.SlotOutput, h.Output()...)
	add(tools.SlotAuthorise, h.Authorise())
	add(tools.SlotRateLimit, h.RateLimit())
	add(tools.SlotConcurrency, h.Concurrency())
	add(tools.SlotCache, h.Cache())
	add(tools.SlotInput, h.Normalise())
	add(tools.SlotRetry, h.Retry())
	return out
}
