package hooks

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/tools"
)

// AuthoriseConfig says who may call a tool. A principal is "*" (anyone,
// anonymous included), "subject:NAME" (the identity's subject) or
// "scope:NAME" (an identity granted that scope).
type AuthoriseConfig struct {
	// Allow is nil when everyone may call; it is never empty.
	Allow []string `json:"allow" jsonschema:"Principals that may call: * (anyone), subject:NAME or scope:NAME. When absent, everyone may. Per tool, it replaces the server-wide list." schema:"minItems=1,uniqueItems,format=principal"`
	Deny  []string `json:"deny" jsonschema:"Principals refused even when allowed. Per tool, they add to the server-wide list." schema:"uniqueItems,format=principal"`
}

// Authorise returns the authorise stage: it refuses a call when the
// client's identity (package identity: the bearer token's subject and
// scopes on HTTP, the local user on stdio) matches a deny entry of the
// tool, or matches none of its allow entries. The refusal is an error
// result naming the missing permission, such as
//
//	Not authorised to call 'deploy': requires scope deploy.
//
// It also refuses a tool the flags (Config.Flags) turn off for the caller:
//
//	Not authorised to call 'write_file': it is turned off for subject bob.
//
// Tools a client may not call are also hidden from its tools/list (see
// Visible). Nil when no tool has allow or deny entries and no flag turns a
// tool off.
func (h *Hooks) Authorise() tools.Middleware {
	if !h.authorise {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if why := h.refusal(call.Tool, callerOf(ctx, call)); why != "" {
				return tools.Failure(tools.ClassUnauthorised, fmt.Sprintf("Not authorised to call '%s': %s.", call.Tool.Name(), why))
			}
			return next(ctx, call)
		}
	}
}

// refusal returns why c may not call t, or "" when it may: the allow and
// deny lists first, then the flags.
func (h *Hooks) refusal(t *tools.Tool, c caller) string {
	if why := h.plan(t).authorised(c.id); why != "" {
		return why
	}
	return h.flags.toolOff(t.Name(), c)
}

// authorised returns "" when id may call the plan's tool, or why not.
func (p *plan) authorised(id identity.Identity) string {
	for _, d := range p.deny {
		if d.matches(id) {
			return d.denied()
		}
	}
	if !p.allowed {
		return ""
	}
	for _, a := range p.allow {
		if a.matches(id) {
			return ""
		}
	}
	want := make([]string, len(p.allow))
	for i, a := range p.allow {
		want[i] = a.String()
	}
	if len(want) == 1 {
		return "requires " + want[0]
	}
	return "requires one of: " + strings.Join(want, ", ")
}

// principal is an entry of an allow or deny list: anyone, a subject or a
// scope.
type principal struct {
	anyone         bool
	subject, scope string
}

// principals parses the entries at key.
func principals(key string, entries []string, bad func(key, format string, args ...any)) []principal {
	if entries != nil && len(entries) == 0 && strings.HasSuffix(key, ".allow") {
		bad(key, "must not be empty (leave it out to allow everyone)")
	}
	var out []principal
	for i, e := range entries {
		p, why := parsePrincipal(e)
		if why != "" {
			bad(fmt.Sprintf("%s[%d]", key, i), "%s", why)
			continue
		}
		out = append(out, p)
	}
	return out
}

// parsePrincipal parses an entry of an allow or deny list, or says what is
// wrong with it.
func parsePrincipal(s string) (principal, string) {
	if s == "*" {
		return principal{anyone: true}, ""
	}
	kind, name, ok := strings.Cut(s, ":")
	if ok && name != "" && strings.TrimSpace(name) == name {
		switch kind {
		case "subject":
			return principal{subject: name}, ""
		case "scope":
			return principal{scope: name}, ""
		}
	}
	return principal{}, fmt.Sprintf(`invalid principal %q (want "*", "subject:NAME" or "scope:NAME")`, s)
}

func (p principal) matches(id identity.Identity) bool {
	switch {
	case p.anyone:
		return true
	case p.subject != "":
		return id.Subject == p.subject
	default:
		return id.HasScope(p.scope)
	}
}

// String names the permission, as error messages say it.
func (p principal) String() string {
	switch {
	case p.anyone:
		return "anyone"
	case p.subject != "":
		return "subject " + p.subject
	default:
		return "scope " + p.scope
	}
}

// denied says why a deny entry refused id.
func (p principal) denied() string {
	switch {
	case p.subject != "":
		return fmt.Sprintf("subject '%s' is denied", p.subject)
	case p.scope != "":
		return fmt.Sprintf("scope '%s' is denied", p.scope)
	}
	return "it is denied to everyone"
}
