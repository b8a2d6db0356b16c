package hooks

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Hook is a stage placed in the call pipeline: the slot it runs in, its
// priority within the slot and the tools it applies to. The built-in
// stages are hooks too, named as the package documentation lists them;
// Config.Hooks adds a program's own. The configuration changes the
// placement of either by name (Config.Stages) and turns them on or off
// per caller (Config.Flags).
type Hook struct {
	// Name names the hook in the configuration; it is required, and no
	// two hooks, built-in stages included, share one.
	Name string
	// Slot is where in the pipeline the hook runs.
	Slot tools.Slot
	// Priority orders the hooks of a slot: a higher priority runs first
	// on the way in, and last on the way out. Hooks of equal priority keep
	// their order: the built-in stages first, as the package documentation
	// lists them, then Config.Hooks. The built-in stages have priority 0.
	Priority int
	// Filter limits the hook to the tools it matches.
	Filter Filter
	// Off leaves the hook off until the configuration turns it on
	// (stages.NAME.enabled, or a flag for some callers).
	Off bool
	// Stage is the hook's middleware.
	Stage tools.Middleware
}

// Filter limits a hook to some tools: those whose name matches one of
// Tools (path.Match patterns; any name when there are none) and that
// carry every annotation of Annotations. The zero Filter matches every
// tool. Which tools a hook applies to is decided once, when New builds the
// stages: a call of another tool passes the hook at the cost of a map
// lookup.
type Filter struct {
	Tools       []string     `json:"tools" jsonschema:"Tool names or patterns (path.Match syntax, such as write_* or planning_*); the stage runs for the tools that match one. When absent, for every tool." schema:"uniqueItems,minLength=1,format=glob"`
	Annotations []Annotation `json:"annotations" jsonschema:"Annotations a tool must all carry for the stage to run for it." schema:"uniqueItems"`
}

// Annotation names a tool annotation (tools.Annotations) in a Filter.
type Annotation string

// The annotations a Filter can require.
const (
	ReadOnly    Annotation = "read_only"
	Destructive Annotation = "destructive"
	Idempotent  Annotation = "idempotent"
	OpenWorld   Annotation = "open_world"
)

// Enum lists the annotations, for the configuration's schema.
func (Annotation) Enum() []string {
	return []string{string(ReadOnly), string(Destructive), string(Idempotent), string(OpenWorld)}
}

// has reports whether t carries annotation a.
func (a Annotation) has(t *tools.Tool) bool {
	ann := t.Annotations()
	switch a {
	case ReadOnly:
		return ann.ReadOnly
	case Destructive:
		return ann.Destructive
	case Idempotent:
		return ann.Idempotent
	case OpenWorld:
		return ann.OpenWorld
	}
	return false
}

// Matches reports whether f lets its hook run for t.
func (f Filter) Matches(t *tools.Tool) bool {
	for _, a := range f.Annotations {
		if !a.has(t) {
			return false
		}
	}
	if len(f.Tools) == 0 {
		return true
	}
	for _, p := range f.Tools {
		if ok, _ := path.Match(p, t.Name()); ok {
			return true
		}
	}
	return false
}

// StageConfig places one hook, built-in or not, by its name; absent keys
// leave the hook's own settings.
type StageConfig struct {
	Enabled  *bool   `json:"enabled" jsonschema:"Whether the stage runs; flags may still turn it on or off for some callers. A stage the other settings leave off does not run either way."`
	Priority *int    `json:"priority" jsonschema:"The stage's order within its slot of the pipeline: a higher priority runs first on the way in and last on the way out. Stages of equal priority keep their order; the built-in stages have priority 0."`
	Filter   *Filter `json:"filter" jsonschema:"The tools the stage runs for; it replaces the stage's own filter."`
}

// builtinNames names the built-in stages, by slot and in their order in
// it: the names the configuration's stages and flags use.
var builtinNames = []string{
	"metrics", "audit", "cap_output", "redact", "validate_output", "deadline_reminder",
	"authorise", "rate_limit", "concurrency", "cache", "normalise", "retry",
}

// builtins returns the built-in stages as hooks, those that are off with
// a nil Stage, in the order of builtinNames.
func (h *Hooks) builtins() []Hook {
	return []Hook{
		{Name: "metrics", Slot: tools.SlotMetrics, Stage: h.Metrics()},
		{Name: "audit", Slot: tools.SlotAudit, Stage: h.Audit()},
		{Name: "cap_output", Slot: tools.SlotOutput, Stage: h.CapOutput()},
		{Name: "redact", Slot: tools.SlotOutput, Stage: h.Redact()},
		{Name: "validate_output", Slot: tools.SlotOutput, Stage: h.ValidateOutput()},
		{Name: "deadline_reminder", Slot: tools.SlotOutput, Stage: h.DeadlineReminder()},
		{Name: "authorise", Slot: tools.SlotAuthorise, Stage: h.Authorise()},
		{Name: "rate_limit", Slot: tools.SlotRateLimit, Stage: h.RateLimit()},
		{Name: "concurrency", Slot: tools.SlotConcurrency, Stage: h.Concurrency()},
		{Name: "cache", Slot: tools.SlotCache, Stage: h.Cache()},
		{Name: "normalise", Slot: tools.SlotInput, Stage: h.Normalise()},
		{Name: "retry", Slot: tools.SlotRetry, Stage: h.Retry()},
	}
}

// fixed is the stage the configuration may not filter, turn off or flag:
// it enforces the flags of tools itself.
const fixed = "authorise"

// checkHooks checks the hooks of cfg.Hooks and the names cfg.Stages and
// cfg.Flags use.
func checkHooks(cfg Config, bad func(key, format string, args ...any)) {
	names := map[string]bool{}
	for _, n := range builtinNames {
		names[n] = true
	}
	for i, hk := range cfg.Hooks {
		key := fmt.Sprintf("hooks[%d]", i)
		switch {
		case hk.Name == "":
			bad(key, "a hook needs a name")
		case names[hk.Name]:
			bad(key, "the name %q is taken", hk.Name)
		case hk.Slot < tools.SlotMetrics || hk.Slot > tools.SlotExecute:
			bad(key, "unknown pipeline slot %v", hk.Slot)
		}
		names[hk.Name] = true
		checkFilter(key+".filter", hk.Filter, bad)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Stages)) {
		key := "stages." + name
		sc := cfg.Stages[name]
		switch {
		case !names[name]:
			bad(key, "unknown stage %q", name)
		case name == fixed && (sc.Enabled != nil || sc.Filter != nil):
			bad(key, "the authorise stage runs for every tool and caller; only its priority can change")
		}
		if sc.Filter != nil {
			checkFilter(key+".filter", *sc.Filter, bad)
		}
	}
	for i, f := range cfg.Flags {
		for _, name := range slices.Sorted(maps.Keys(f.Hooks)) {
			key := fmt.Sprintf("flags[%d].hooks.%s", i, name)
			switch {
			case !names[name]:
				bad(key, "unknown stage %q", name)
			case name == fixed:
				bad(key, "the authorise stage runs for every caller (turn tools off with tools instead)")
			}
		}
	}
}

// checkFilter reports the bad patterns and annotations of f, at key.
func checkFilter(key string, f Filter, bad func(key, format string, args ...any)) {
	for i, p := range f.Tools {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			bad(fmt.Sprintf("%s.tools[%d]", key, i), "invalid glob pattern %q", p)
		}
	}
	for i, a := range f.Annotations {
		if !slices.Contains(a.Enum(), string(a)) {
			bad(fmt.Sprintf("%s.annotations[%d]", key, i), "unknown annotation %q (want one of: read_only, destructive, idempotent, open_world)", a)
		}
	}
}

// placed returns the hooks that run, built-in and cfg.Hooks, with the
// configuration's stages applied, ordered by slot and priority, each
// stage wrapped to skip the tools its filter leaves out and the callers
// the flags turn it off for.
func (h *Hooks) placed(ts []*tools.Tool) []Hook {
	var out []Hook
	for _, hk := range append(h.builtins(), h.cfg.Hooks...) {
		sc := h.cfg.Stages[hk.Name]
		if sc.Enabled != nil {
			hk.Off = !*sc.Enabled
		}
		if sc.Priority != nil {
			hk.Priority = *sc.Priority
		}
		if sc.Filter != nil {
			hk.Filter = *sc.Filter
		}
		flags := h.flags.hook(hk.Name)
		if hk.Stage == nil || hk.Off && len(flags) == 0 {
			continue
		}
		hk.Stage = gate(hk, ts, flags)
		out = append(out, hk)
	}
	slices.SortStableFunc(out, func(a, b Hook) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), cmp.Compare(b.Priority, a.Priority))
	})
	return out
}

// gate wraps the stage of hk so that it runs only for the tools its filter
// matches, decided here for the tools ts, and for the callers for whom
// the flags leave it on. A stage that runs for everyone is returned as it
// is.
func gate(hk Hook, ts []*tools.Tool, flags []flagRef) tools.Middleware {
	var skip map[string]bool // by tool name; absent: not among ts
	for _, t := range ts {
		if !hk.Filter.Matches(t) {
			skip = make(map[string]bool, len(ts))
			break
		}
	}
	if skip != nil {
		for _, t := range ts {
			skip[t.Name()] = !hk.Filter.Matches(t)
		}
	}
	if skip == nil && len(flags) == 0 {
		return hk.Stage
	}
	on := !hk.Off
	return func(next tools.Handler) tools.Handler {
		stage := hk.Stage(next)
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			skipped, known := skip[call.Tool.Name()]
			if !known && skip != nil {
				skipped = !hk.Filter.Matches(call.Tool)
			}
			if skipped || len(flags) > 0 && !decide(on, flags, callerOf(ctx, call)) {
				return next(ctx, call)
			}
			return stage(ctx, call)
		}
	}
}

// Stages returns the stages that run, by the pipeline slot each belongs
// in and in their order there, for server.Options.Stages: the built-in
// stages that are on and Config.Hooks, placed by priority, filtered and
// flagged as configured.
func (h *Hooks) Stages() map[tools.Slot][]tools.Middleware {
	out := map[tools.Slot][]tools.Middleware{}
	for _, hk := range h.hooks {
		out[hk.Slot] = append(out[hk.Slot], hk.Stage)
	}
	return out
}
