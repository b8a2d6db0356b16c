package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/hooks"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/sections"
)

// newHooks builds the lifecycle stages the configuration's hooks group
// describes, refusing tools the tree does not offer. Every problem is a
// config.KeyError naming its key and line.
func newHooks(cfg *config.Config, tree *sections.Tree, logger *slog.Logger) (*hooks.Hooks, error) {
	offered := map[string]bool{}
	for _, t := range tree.Tools() {
		offered[t.Name()] = true
	}
	var errs config.Errors
	for _, name := range slices.Sorted(maps.Keys(cfg.Hooks.Tools)) {
		if !offered[name] {
			errs = append(errs, cfg.Errorf(config.Key("hooks", "tools", name), "unknown tool %q", name))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	h, err := hooks.New(hooksConfig(cfg.Hooks, logger), tree.Tools())
	var ce hooks.ConfigErrors
	if errors.As(err, &ce) {
		for _, e := range ce {
			errs = append(errs, cfg.Errorf("hooks."+e.Key, "%s", e.Msg))
		}
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errs
	}
	return h, err
}

// hooksConfig translates the configuration file's hooks group.
func hooksConfig(c config.Hooks, logger *slog.Logger) hooks.Config {
	h := hooks.Config{
		Authorise:   hooks.AuthoriseConfig{Allow: c.Authorise.Allow, Deny: c.Authorise.Deny},
		RateLimit:   hooks.RateLimitConfig{Rate: c.RateLimit.Rate, Burst: c.RateLimit.Burst, Quota: c.RateLimit.Quota, MaxWait: time.Duration(c.RateLimit.MaxWait)},
		Concurrency: hooks.ConcurrencyConfig{MaxInFlight: c.Concurrency.MaxInFlight},
		Cache:       hooks.CacheConfig{Enabled: c.Cache.Enabled, MaxEntries: c.Cache.MaxEntries, TTL: time.Duration(c.Cache.TTL)},
		Retry:       hooks.RetryConfig{Enabled: c.Retry.Enabled, MaxAttempts: c.Retry.MaxAttempts, BaseDelay: time.Duration(c.Retry.BaseDelay), MaxDelay: time.Duration(c.Retry.MaxDelay)},
		Output:      hooks.OutputConfig{Redact: c.Output.Redact, Validate: c.Output.Validate, MaxTextBytes: c.Output.MaxTextBytes},
		Audit:       hooks.AuditConfig{Log: c.Audit.Log, File: c.Audit.File, Fsync: hooks.Fsync(c.Audit.Fsync)},
		Metrics:     hooks.MetricsConfig{Enabled: c.Metrics.Enabled},
		Tools:       map[string]hooks.ToolConfig{},
		Secrets:     map[string]hooks.SecretSource{},
		Logger:      logger,
	}
	for name, sec := range c.Secrets {
		h.Secrets[name] = hooks.SecretSource{Env: sec.Env, File: sec.File}
	}
	for name, t := range c.Tools {
		var tc hooks.ToolConfig
		if in := t.Input; in != nil {
			tc.Input = &hooks.ToolInputConfig{Trim: in.Trim}
		}
		if a := t.Authorise; a != nil {
			tc.Authorise = &hooks.AuthoriseConfig{Allow: a.Allow, Deny: a.Deny}
		}
		if r := t.RateLimit; r != nil {
			tc.RateLimit = &hooks.ToolRateLimitConfig{Rate: r.Rate, Burst: r.Burst, Quota: r.Quota}
		}
		if cc := t.Concurrency; cc != nil {
			tc.Concurrency = &hooks.ConcurrencyConfig{MaxInFlight: cc.MaxInFlight}
		}
		if ca := t.Cache; ca != nil {
			tc.Cache = &hooks.ToolCacheConfig{Enabled: ca.Enabled}
		}
		if r := t.Retry; r != nil {
			tc.Retry = &hooks.ToolRetryConfig{Enabled: r.Enabled, MaxAttempts: r.MaxAttempts, BaseDelay: durationPtr(r.BaseDelay), MaxDelay: durationPtr(r.MaxDelay)}
		}
		if o := t.Output; o != nil {
			tc.Output = &hooks.ToolOutputConfig{Redact: o.Redact, Validate: o.Validate, MaxTextBytes: o.MaxTextBytes}
		}
		h.Tools[name] = tc
	}
	return h
}

func durationPtr(d *config.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	v := time.Duration(*d)
	return &v
}

// hookHandlers are the HTTP handlers of the lifecycle stages: /metrics,
// when metrics are on. An HTTP transport mounts them (server.Handlers).
func hookHandlers(h *hooks.Hooks) map[string]http.Handler {
	if m := h.MetricsHandler(); m != nil {
		return map[string]http.Handler{"/metrics": m}
	}
	return nil
}

// stdioIdentity returns the context function of the stdio transport: every
// request over stdio comes from the local user.
func stdioIdentity() func(context.Context) context.Context {
	local := identity.Local()
	return func(ctx context.Context) context.Context { return identity.With(ctx, local) }
}
