package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/hooks"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/tools"
)

// newHooks builds the lifecycle stages of the configuration's hooks
// section for the tools of tree, with the planning section's reminder of
// the plan's pending steps as the hook plan_reminder, off until the
// configuration turns it on. Every problem is a config.KeyError naming its
// key and line.
func newHooks(cfg *config.Config, tree *sections.Tree, logger *slog.Logger) (*hooks.Hooks, error) {
	hc := cfg.Hooks
	hc.Logger = logger
	hc.Hooks = append(slices.Clip(hc.Hooks), hooks.Hook{Name: planning.ReminderHook, Slot: tools.SlotOutput, Off: true, Stage: planning.RemindPending})
	h, err := hooks.New(hc, tree.Tools())
	var ce hooks.ConfigErrors
	if !errors.As(err, &ce) {
		return h, err
	}
	errs := make(config.Errors, len(ce))
	for i, e := range ce {
		errs[i] = cfg.Errorf("hooks."+e.Key, "%s", e.Msg)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errs
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
