package hooks

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
)

func probeTools(t *testing.T) *sections.Tree {
	tree, err := sections.NewTree(newProbe().section())
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func TestDefaults(t *testing.T) {
	h, err := New(Defaults(), probeTools(t).Tools())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	on := map[string]bool{
		"metrics":     h.Metrics() != nil,
		"audit":       h.Audit() != nil,
		"cap":         h.CapOutput() != nil,
		"concurrency": h.Concurrency() != nil,
		"authorise":   h.Authorise() != nil,
		"rate limit":  h.RateLimit() != nil,
		"cache":       h.Cache() != nil,
		"retry":       h.Retry() != nil,
		"redact":      h.Redact() != nil,
		"validate":    h.ValidateOutput() != nil,
	}
	for stage, want := range map[string]bool{"metrics": true, "audit": true, "cap": true, "concurrency": true} {
		if on[stage] != want {
			t.Errorf("%s on = %v by default", stage, on[stage])
		}
		delete(on, stage)
	}
	for stage, v := range on {
		if v {
			t.Errorf("%s is on by default", stage)
		}
	}
	if h.serverSemN != 64 || h.plans["p_read"].maxText != 100<<10 {
		t.Errorf("defaults: %d slots, cap %d", h.serverSemN, h.plans["p_read"].maxText)
	}
	// The zero Config turns everything off.
	h0, err := New(Config{}, probeTools(t).Tools())
	if err != nil {
		t.Fatal(err)
	}
	for _, mw := range append([]tools.Middleware{h0.CapOutput(), h0.Redact(), h0.ValidateOutput(), h0.DeadlineReminder()}, h0.Metrics(), h0.Audit(), h0.Authorise(), h0.RateLimit(), h0.Concurrency(), h0.Cache(), h0.Retry()) {
		if mw != nil {
			t.Error("a stage is on in the zero Config")
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown tool", Config{Tools: map[string]ToolConfig{"nope": {}}}, `tools.nope: unknown tool "nope"`},
		{"negative rate", Config{RateLimit: RateLimitConfig{Rate: -1}}, "rate_limit.rate: must not be negative, got -1"},
		{"negative quota", Config{RateLimit: RateLimitConfig{Quota: -5}}, "rate_limit.quota: must not be negative, got -5"},
		{"negative tool rate", Config{Tools: map[string]ToolConfig{"p_read": {RateLimit: &ToolRateLimitConfig{Rate: -0.5}}}}, "tools.p_read.rate_limit.rate: must not be negative, got -0.5"},
		{"negative wait", Config{RateLimit: RateLimitConfig{MaxWait: -time.Second}}, "rate_limit.max_wait: must not be negative, got -1s"},
		{"negative concurrency", Config{Concurrency: ConcurrencyConfig{MaxInFlight: -1}}, "concurrency.max_in_flight: must not be negative, got -1"},
		{"negative tool concurrency", Config{Tools: map[string]ToolConfig{"p_read": {Concurrency: &ConcurrencyConfig{MaxInFlight: -2}}}}, "tools.p_read.concurrency.max_in_flight: must not be negative, got -2"},
		{"bad regex", Config{Output: OutputConfig{Redact: []string{"ok", "(unclosed"}}}, `output.redact[1]: invalid regular expression "(unclosed": missing closing )`},
		{"bad tool regex", Config{Tools: map[string]ToolConfig{"p_read": {Output: &ToolOutputConfig{Redact: []string{"a**"}}}}}, `tools.p_read.output.redact[0]: invalid regular expression "a**": invalid nested repetition operator`},
		{"regex matching nothing", Config{Output: OutputConfig{Redact: []string{"x*"}}}, `output.redact[0]: regular expression "x*" matches the empty string`},
		{"bad principal", Config{Authorise: AuthoriseConfig{Allow: []string{"alice"}}}, `authorise.allow[0]: invalid principal "alice" (want "*", "subject:NAME" or "scope:NAME")`},
		{"empty allow", Config{Authorise: AuthoriseConfig{Allow: []string{}}}, "authorise.allow: must not be empty (leave it out to allow everyone)"},
		{"retry delays", Config{Retry: RetryConfig{BaseDelay: time.Second, MaxDelay: time.Millisecond}}, "retry.max_delay: must not be less than base_delay (1s)"},
		{"retry attempts", Config{Tools: map[string]ToolConfig{"p_flaky": {Retry: &ToolRetryConfig{MaxAttempts: ptr(0)}}}}, "tools.p_flaky.retry.max_attempts: must be at least 1, got 0"},
		{"fsync", Config{Audit: AuditConfig{Fsync: "sometimes"}}, "audit.fsync: must be one of: always, interval, never"},
		{"negative cap", Config{Output: OutputConfig{MaxTextBytes: -1}}, "output.max_text_bytes: must not be negative, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, probeTools(t).Tools())
			var ce ConfigErrors
			if !errors.As(err, &ce) || err.Error() != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
	// Several problems are reported together.
	_, err := New(Config{RateLimit: RateLimitConfig{Rate: -1, Burst: -1}, Tools: map[string]ToolConfig{"x": {}}}, probeTools(t).Tools())
	var ce ConfigErrors
	if !errors.As(err, &ce) || len(ce) != 3 {
		t.Errorf("got %v, want 3 errors", err)
	}
}

func TestAuditFileError(t *testing.T) {
	_, err := New(Config{Audit: AuditConfig{File: t.TempDir() + "/no/such/dir/audit.jsonl"}}, probeTools(t).Tools())
	var ce ConfigErrors
	if !errors.As(err, &ce) || ce[0].Key != "audit.file" {
		t.Errorf("got %v, want an error at audit.file", err)
	}
}

// TestStagesSlots: every stage that is on is in its slot, the output slot
// holding the cap, redaction and validation.
func TestStagesSlots(t *testing.T) {
	cfg := Defaults()
	cfg.Authorise = AuthoriseConfig{Allow: []string{"scope:plan"}}
	cfg.RateLimit = RateLimitConfig{Rate: 1e9}
	cfg.Cache = CacheConfig{Enabled: true}
	cfg.Retry = RetryConfig{Enabled: true}
	cfg.Output = OutputConfig{Redact: []string{`sk-[A-Za-z0-9]{20,}`}, Validate: true, MaxTextBytes: 100 << 10}
	cfg.Audit = AuditConfig{Log: true, File: filepath.Join(t.TempDir(), "audit.jsonl")}
	h, err := New(cfg, probeTools(t).Tools())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	stages := h.Stages()
	for _, slot := range []tools.Slot{tools.SlotMetrics, tools.SlotAudit, tools.SlotAuthorise, tools.SlotRateLimit, tools.SlotConcurrency, tools.SlotCache, tools.SlotRetry} {
		if len(stages[slot]) != 1 {
			t.Errorf("%v: %d stages, want 1", slot, len(stages[slot]))
		}
	}
	if len(stages) != 8 || len(stages[tools.SlotOutput]) != 3 {
		t.Errorf("stages %v", stages)
	}
}
