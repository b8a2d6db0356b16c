package hooks

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/tools"
)

// FlagConfig turns stages and tools on or off for the callers it names:
// those whose identity matches one of Principals and whose session id
// matches one of Sessions (either list, when absent, matches every
// caller). The flags apply in order: for each stage and tool, the last
// flag that names it and matches the caller decides.
type FlagConfig struct {
	Principals []string        `json:"principals" jsonschema:"The callers the flag is for: * (anyone), subject:NAME or scope:NAME. When absent, every caller." schema:"uniqueItems,format=principal"`
	Sessions   []string        `json:"sessions" jsonschema:"The sessions the flag is for, by id or pattern (path.Match syntax). When absent, every session." schema:"uniqueItems,minLength=1,format=glob"`
	Hooks      map[string]bool `json:"hooks" jsonschema:"Stages turned on (true) or off (false) for these callers, by name (see stages). A stage the other settings leave off cannot be turned on."`
	Tools      map[string]bool `json:"tools" jsonschema:"Tools turned on (true) or off (false) for these callers, by name or pattern (path.Match syntax). A tool turned off is refused with an error result, and hidden from the tools/list of the principals it is off for."`
}

// flag is a FlagConfig, parsed.
type flag struct {
	principals []principal
	sessions   []string
}

// flagRef is what one flag says of one stage or tool.
type flagRef struct {
	*flag
	on bool
}

// flags are the configuration's flags, resolved by stage and by tool.
type flags struct {
	hooks map[string][]flagRef // by stage name
	tools map[string][]flagRef // by tool name
}

// caller is who makes a call: the identity and, once the call has one, the
// session id.
type caller struct {
	id      identity.Identity
	session string
}

// callerOf returns the caller of call.
func callerOf(ctx context.Context, call *tools.Call) caller {
	id, _ := identity.From(ctx)
	c := caller{id: id}
	if call.Session != nil {
		c.session = call.Session.ID()
	}
	return c
}

// newFlags parses cfg's flags for the tools ts, reporting the problems.
func newFlags(cfg []FlagConfig, ts []*tools.Tool, bad func(key, format string, args ...any)) flags {
	fs := flags{hooks: map[string][]flagRef{}, tools: map[string][]flagRef{}}
	for i, fc := range cfg {
		key := fmt.Sprintf("flags[%d]", i)
		f := &flag{principals: principals(key+".principals", fc.Principals, bad), sessions: fc.Sessions}
		for j, s := range fc.Sessions {
			if _, err := path.Match(s, ""); err != nil || s == "" {
				bad(fmt.Sprintf("%s.sessions[%d]", key, j), "invalid glob pattern %q", s)
			}
		}
		if len(fc.Hooks) == 0 && len(fc.Tools) == 0 {
			bad(key, "turns nothing on or off (give hooks or tools)")
		}
		for _, name := range slices.Sorted(maps.Keys(fc.Hooks)) {
			fs.hooks[name] = append(fs.hooks[name], flagRef{f, fc.Hooks[name]})
		}
		for _, pattern := range slices.Sorted(maps.Keys(fc.Tools)) {
			matched := false
			for _, t := range ts {
				if ok, _ := path.Match(pattern, t.Name()); ok {
					fs.tools[t.Name()] = append(fs.tools[t.Name()], flagRef{f, fc.Tools[pattern]})
					matched = true
				}
			}
			if !matched {
				bad(key+".tools."+pattern, "matches no tool")
			}
		}
	}
	return fs
}

// hook returns what the flags say of the stage name, in order.
func (fs flags) hook(name string) []flagRef { return fs.hooks[name] }

// matches reports whether the flag is for c.
func (f *flag) matches(c caller) bool {
	return f.principal(c.id) != nil && f.session(c.session)
}

// principal returns the principal of the flag that id matches, the zero
// principal when the flag names none, or nil when id matches none.
func (f *flag) principal(id identity.Identity) *principal {
	if len(f.principals) == 0 {
		return &principal{}
	}
	for i := range f.principals {
		if f.principals[i].matches(id) {
			return &f.principals[i]
		}
	}
	return nil
}

// session reports whether the flag is for session id s: any session when
// it names none. A caller without a session yet (a tools/list) matches
// only a flag that names none.
func (f *flag) session(s string) bool {
	if len(f.sessions) == 0 {
		return true
	}
	for _, p := range f.sessions {
		if ok, _ := path.Match(p, s); ok && s != "" {
			return true
		}
	}
	return false
}

// decide returns whether what refs are about is on for c: the last of refs
// that matches c decides, def when none does.
func decide(def bool, refs []flagRef, c caller) bool {
	on := def
	for _, r := range refs {
		if r.matches(c) {
			on = r.on
		}
	}
	return on
}

// toolOff returns why the flags turn tool off for c, or "" when they do
// not.
func (fs flags) toolOff(tool string, c caller) string {
	var last *flagRef
	for i, r := range fs.tools[tool] {
		if r.matches(c) {
			last = &fs.tools[tool][i]
		}
	}
	if last == nil || last.on {
		return ""
	}
	who := "everyone"
	switch {
	case len(last.principals) > 0 && !last.principal(c.id).anyone:
		who = last.principal(c.id).String()
	case len(last.sessions) > 0:
		who = "session " + c.session
	}
	return "it is turned off for " + who
}
