package config

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/hooks"
)

func ptr[T any](v T) *T { return &v }

// exampleHooks is the hooks section of example.yaml.
var exampleHooks = hooks.Config{
	Authorise:   hooks.AuthoriseConfig{Allow: []string{"scope:wink.read", "subject:me"}, Deny: []string{"subject:intruder"}},
	RateLimit:   hooks.RateLimitConfig{Rate: 10, Burst: 20, Quota: 10000, MaxWait: 500 * time.Millisecond},
	Concurrency: hooks.ConcurrencyConfig{MaxInFlight: 32},
	Cache:       hooks.CacheConfig{Enabled: true, MaxEntries: 128, TTL: 5 * time.Minute},
	Retry:       hooks.RetryConfig{Enabled: true, MaxAttempts: 4, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second},
	Output:      hooks.OutputConfig{Redact: []string{`sk-[A-Za-z0-9]{20,}`, `ghp_[A-Za-z0-9]{36}`}, Validate: true, MaxTextBytes: 65536},
	Audit:       hooks.AuditConfig{Log: true, File: "/var/log/wink/audit.jsonl", Fsync: hooks.FsyncAlways},
	Metrics:     hooks.MetricsConfig{Enabled: true},
	Secrets:     map[string]hooks.SecretSource{"github_token": {Env: "GITHUB_TOKEN"}, "signing_key": {File: "/etc/wink/signing.key"}},
	Tools: map[string]hooks.ToolConfig{
		"planning_setup_plan": {
			Input:       &hooks.ToolInputConfig{Trim: true},
			Authorise:   &hooks.AuthoriseConfig{Allow: []string{"scope:wink.write"}, Deny: []string{"scope:guest"}},
			RateLimit:   &hooks.ToolRateLimitConfig{Rate: 0.5, Burst: 1, Quota: 100},
			Concurrency: &hooks.ConcurrencyConfig{MaxInFlight: 4},
			Retry:       &hooks.ToolRetryConfig{Enabled: ptr(false)},
			Output:      &hooks.ToolOutputConfig{Redact: []string{`password=\S+`}, Validate: ptr(false), MaxTextBytes: ptr(0)},
		},
		"planning_read_plan": {Cache: &hooks.ToolCacheConfig{Enabled: ptr(true)}},
		"planning_update_step": {Retry: &hooks.ToolRetryConfig{
			Enabled: ptr(true), MaxAttempts: ptr(2), BaseDelay: ptr(50 * time.Millisecond), MaxDelay: ptr(time.Second),
		}},
	},
	DeadlineReminder: hooks.DeadlineConfig{At: time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC), Session: 2 * time.Hour, Within: 15 * time.Minute},
	Stages: map[string]hooks.StageConfig{
		"plan_reminder": {Enabled: ptr(true), Priority: ptr(1), Filter: &hooks.Filter{Tools: []string{"planning_*"}, Annotations: []hooks.Annotation{hooks.Idempotent}}},
	},
	Flags: []hooks.FlagConfig{{
		Principals: []string{"scope:guest"}, Sessions: []string{"ci-*"},
		Tools: map[string]bool{"planning_setup_plan": false},
		Hooks: map[string]bool{"plan_reminder": false, "cache": false},
	}},
}

func TestParseHooks(t *testing.T) {
	c, err := Parse("c.yaml", []byte("hooks:\n  retry: {enabled: true}\n  audit: {file: a.jsonl}\n  tools:\n    t1:\n      cache: {enabled: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Default().Hooks
	want.Retry.Enabled = true
	want.Audit.File = "a.jsonl"
	want.Tools = map[string]hooks.ToolConfig{"t1": {Cache: &hooks.ToolCacheConfig{Enabled: ptr(false)}}}
	if !reflect.DeepEqual(c.Hooks, want) {
		t.Errorf("got %+v\nwant %+v", c.Hooks, want)
	}
}

func TestHooksErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"negative rate", "hooks:\n  rate_limit:\n    rate: -1\n",
			"c.yaml:3: hooks.rate_limit.rate: must be at least 0, got -1"},
		{"negative tool rate", "hooks:\n  tools:\n    t:\n      rate_limit: {rate: -0.5}\n",
			"c.yaml:4: hooks.tools.t.rate_limit.rate: must be at least 0, got -0.5"},
		{"negative concurrency", "hooks:\n  concurrency: {max_in_flight: -3}\n",
			"c.yaml:2: hooks.concurrency.max_in_flight: must be at least 0, got -3"},
		{"bad regex", "hooks:\n  output:\n    redact:\n      - ok\n      - '(unclosed'\n",
			`c.yaml:5: hooks.output.redact[1]: invalid regular expression "(unclosed": missing closing )`},
		{"bad tool regex", "hooks:\n  tools:\n    t:\n      output: {redact: ['a**']}\n",
			`c.yaml:4: hooks.tools.t.output.redact[0]: invalid regular expression "a**": invalid nested repetition operator`},
		{"regex matching everything", "hooks:\n  output: {redact: ['.*']}\n",
			`c.yaml:2: hooks.output.redact[0]: regular expression ".*" matches the empty string`},
		{"bad principal", "hooks:\n  authorise:\n    allow: [alice]\n",
			`c.yaml:3: hooks.authorise.allow[0]: invalid principal "alice" (want "*", "subject:NAME" or "scope:NAME")`},
		{"empty allow", "hooks:\n  authorise:\n    allow: []\n",
			"c.yaml:3: hooks.authorise.allow: must not be empty"},
		{"bad duration", "hooks:\n  retry:\n    base_delay: soon\n",
			`c.yaml:3: hooks.retry.base_delay: invalid duration "soon" (use a Go duration such as "30s" or "1m30s")`},
		{"negative duration", "hooks:\n  cache:\n    ttl: -1s\n",
			`c.yaml:3: hooks.cache.ttl: must not be negative, got "-1s"`},
		{"negative tool duration", "hooks:\n  tools:\n    t:\n      retry: {max_delay: -5ms}\n",
			`c.yaml:4: hooks.tools.t.retry.max_delay: must not be negative, got "-5ms"`},
		{"fsync", "hooks:\n  audit: {fsync: sometimes}\n",
			"c.yaml:2: hooks.audit.fsync: must be one of: always, interval, never"},
		{"unknown stage", "hooks:\n  cach: {}\n",
			"c.yaml:2: hooks.cach: unknown key (known keys: audit, authorise, cache, concurrency, deadline_reminder, flags, metrics, output, rate_limit, retry, secrets, stages, tools)"},
		{"unknown tool key", "hooks:\n  tools:\n    t:\n      audit: {}\n",
			"c.yaml:4: hooks.tools.t.audit: unknown key (known keys: authorise, cache, concurrency, input, output, rate_limit, retry)"},
		{"unknown secret key", "hooks:\n  secrets:\n    k: {environment: X}\n",
			"c.yaml:3: hooks.secrets.k.environment: unknown key (known keys: env, file)"},
		{"zero attempts", "hooks:\n  retry: {max_attempts: 0}\n",
			"c.yaml:2: hooks.retry.max_attempts: must be at least 1, got 0"},
		{"bad deadline", "hooks:\n  deadline_reminder: {at: tomorrow}\n",
			`c.yaml:2: hooks.deadline_reminder.at: invalid time "tomorrow" (use RFC 3339, such as 2026-11-25T17:00:00Z)`},
		{"bad annotation", "hooks:\n  stages:\n    cache:\n      filter: {annotations: [readOnly]}\n",
			`c.yaml:4: hooks.stages.cache.filter.annotations[0]: must be one of: read_only, destructive, idempotent, open_world`},
		{"bad flag principal", "hooks:\n  flags:\n    - principals: [bob]\n      hooks: {cache: false}\n",
			`c.yaml:3: hooks.flags[0].principals[0]: invalid principal "bob" (want "*", "subject:NAME" or "scope:NAME")`},
		{"bad flag session", "hooks:\n  flags:\n    - sessions: ['[']\n      hooks: {cache: false}\n",
			`c.yaml:3: hooks.flags[0].sessions[0]: invalid glob pattern "["`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Errorf("%T is not a KeyError", err)
			}
		})
	}
}
