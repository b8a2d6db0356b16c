// Package consent is the consent stage: before a call of a tool that the
// configuration marks runs, the user is asked, through the client
// (elicitation), whether it may, with the call's arguments shown as the
// audit records them. Accepted, the call runs; declined or cancelled, it
// does not, nothing changes, and the result says so. A client that cannot
// ask (no elicitation capability, or no way back to it) gets the
// configured fallback, deny by default. The user may allow a tool for the
// rest of the session, when the configuration offers it: the session
// keeps the decision, committed with the call it allowed, and rolled back
// with it. Each decision is recorded on the call's outcome (Consent) and
// so in its audit record.
//
// The stage asks with tools.Client.Elicit, on both protocol eras: a client
// of the 2026-07-28 era is answered input_required and retries the call
// with the user's answer (see tools.Client).
package consent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Config configures the consent stage.
type Config struct {
	Enabled  bool     `json:"enabled" jsonschema:"Whether the tools that tools names ask the user before they run. Default: false."`
	Tools    []string `json:"tools" jsonschema:"The tools that ask, by name or glob (path.Match syntax: planning_*). Default: every tool annotated destructive." schema:"uniqueItems,minLength=1"`
	Fallback Fallback `json:"fallback" jsonschema:"What happens to a call whose client cannot ask the user (it has no elicitation capability, or the transport no way back to it): deny (the default), allow, or console (the question waits in the web console, and the call for its answer until its deadline)."`
	Remember bool     `json:"remember" jsonschema:"Whether the user is offered to allow a tool for the rest of the session. Default: false."`
}

// Fallback is what the stage does when the client cannot ask.
type Fallback string

// The fallbacks.
const (
	Deny    Fallback = "deny"
	Allow   Fallback = "allow"
	Console Fallback = "console"
)

// Enum lists the values of Fallback.
func (Fallback) Enum() []string { return []string{string(Deny), string(Allow), string(Console)} }

// A Desk puts a question that no client can ask to a person elsewhere (the
// web console), and waits until they answer or ctx ends (the call's
// deadline); it reports whether they accepted.
type Desk func(ctx context.Context, call *tools.Call, message string) (accepted bool, err error)

// The decisions a call's record shows (tools.Outcome.Consent).
const (
	Accepted           = "accepted"
	AcceptedForSession = "accepted for the session"
	Remembered         = "remembered for the session"
	Declined           = "declined"
	Cancelled          = "cancelled"
	AllowedByFallback  = "allowed by fallback"
	DeniedByFallback   = "denied by fallback"
	AcceptedInConsole  = "accepted in the console"
	DeclinedInConsole  = "declined in the console"
	Unanswered         = "unanswered in the console"
	Failed             = "failed"
)

// RememberField is the boolean field of the elicitation form that allows
// the tool for the rest of the session, when Config.Remember offers it.
const RememberField = "remember"

// maxShownArgs bounds the arguments the user is shown, in bytes.
const maxShownArgs = 4096

// allowed is the session state of the tools the user allowed for the rest
// of the session, sorted.
var allowed = session.NewKey[[]string]("consent.allowed")

// Stage is the consent stage of a server's tools.
type Stage struct {
	cfg    Config
	asks   map[string]bool
	redact func(*tools.Tool, json.RawMessage) json.RawMessage
	desk   Desk
}

// New returns the consent stage for the tools all, or nil when cfg does
// not enable it. redact returns a call's arguments as the audit records
// them (nil: as sent). An entry of cfg.Tools that is not a valid glob, or
// a name without glob characters that no tool has, is an error.
func New(cfg Config, all []*tools.Tool, redact func(*tools.Tool, json.RawMessage) json.RawMessage) (*Stage, error) {
	switch cfg.Fallback {
	case "":
		cfg.Fallback = Deny
	case Deny, Allow, Console:
	default:
		return nil, &ConfigError{"fallback", fmt.Sprintf("%q is not a fallback (want deny, allow or console)", cfg.Fallback)}
	}
	s := &Stage{cfg: cfg, asks: map[string]bool{}, redact: redact}
	for _, p := range cfg.Tools {
		if _, err := path.Match(p, ""); err != nil {
			return nil, &ConfigError{"tools", fmt.Sprintf("%q is not a glob: %v", p, err)}
		}
		if !strings.ContainsAny(p, `*?[\`) && !slices.ContainsFunc(all, func(t *tools.Tool) bool { return t.Name() == p }) {
			return nil, &ConfigError{"tools", fmt.Sprintf("no tool is called %q", p)}
		}
	}
	for _, t := range all {
		s.asks[t.Name()] = s.marks(t)
	}
	if !cfg.Enabled {
		return nil, nil
	}
	return s, nil
}

// ConfigError is a problem with the key Key of Config.
type ConfigError struct {
	Key, Msg string
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Msg }

// marks reports whether the configuration marks t.
func (s *Stage) marks(t *tools.Tool) bool {
	if s.cfg.Tools == nil {
		a := t.Annotations()
		return !a.ReadOnly && a.Destructive
	}
	return slices.ContainsFunc(s.cfg.Tools, func(p string) bool {
		ok, _ := path.Match(p, t.Name())
		return ok
	})
}

// Setup declares how the session keeps the tools allowed for it: a sorted
// JSON array of names. Nil-safe, so that a server without the stage may
// call it.
func (s *Stage) Setup(r *session.Registry) {
	if s != nil {
		session.Persist(r, allowed, session.JSON[[]string]())
	}
}

// SetDesk sets where a question goes when the client cannot ask and the
// fallback is Console. Without a desk such a call is denied. Nil-safe.
func (s *Stage) SetDesk(d Desk) {
	if s != nil {
		s.desk = d
	}
}

// Asks reports whether the stage asks the user before a call of the tool
// named tool runs; false for a nil stage.
func (s *Stage) Asks(tool string) bool { return s != nil && s.asks[tool] }

// Middleware returns the stage; nil for a nil stage.
func (s *Stage) Middleware() tools.Middleware {
	if s == nil {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			name := call.Tool.Name()
			if !s.asks[name] || call.DryRun { // a dry run changes nothing
				return next(ctx, call)
			}
			if s.cfg.Remember && AllowedFor(call.Session, name) {
				return decided(next(ctx, call), Remembered)
			}
			res, err := s.ask(ctx, call)
			switch {
			case errors.Is(err, tools.ErrInputRequired):
				o := tools.Failure(tools.ClassInputRequired, fmt.Sprintf("Tool '%s' waits for the user's consent.", name))
				o.Err = err
				return o
			case errors.Is(err, tools.ErrNoClient) && s.cfg.Fallback == Allow:
				return decided(next(ctx, call), AllowedByFallback)
			case errors.Is(err, tools.ErrNoClient) && s.cfg.Fallback == Console && s.desk != nil:
				accepted, err := s.desk(ctx, call, s.message(call))
				switch {
				case err != nil:
					return refused(fmt.Sprintf("Tool '%s' needs the user's consent, asked in the console, and no answer came before the call's deadline: it did not run, and nothing changed.", name), Unanswered, err)
				case !accepted:
					return refused(fmt.Sprintf("The user declined '%s' in the console: it did not run, and nothing changed.", name), DeclinedInConsole, nil)
				}
				return decided(next(ctx, call), AcceptedInConsole)
			case errors.Is(err, tools.ErrNoClient):
				return refused(fmt.Sprintf("Tool '%s' needs the user's consent, and this client cannot ask for it: it did not run, and nothing changed.", name), DeniedByFallback, err)
			case err != nil:
				return refused(fmt.Sprintf("Tool '%s' needs the user's consent, and asking for it failed: it did not run, and nothing changed.", name), Failed, err)
			}
			switch res.Action {
			case mcp.ElicitationResponseActionAccept:
				if !s.cfg.Remember || !remember(res.Content) {
					return decided(next(ctx, call), Accepted)
				}
				call.OnCommit(func(*tools.Outcome) error {
					session.Set(call.Session, allowed, with(call.Session, name))
					return nil
				})
				return decided(next(ctx, call), AcceptedForSession)
			case mcp.ElicitationResponseActionDecline:
				return refused(fmt.Sprintf("The user declined '%s': it did not run, and nothing changed.", name), Declined, nil)
			default:
				return refused(fmt.Sprintf("The user cancelled '%s': it did not run, and nothing changed.", name), Cancelled, nil)
			}
		}
	}
}

// message is the question put to the user about call, with its
// arguments as the audit records them.
func (s *Stage) message(call *tools.Call) string {
	args := call.Args
	if s.redact != nil {
		args = s.redact(call.Tool, args)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return fmt.Sprintf("Allow the tool '%s' to run with these arguments?\n%s", call.Tool.Name(), session.Cut(args, maxShownArgs))
}

// ask asks the user whether call may run.
func (s *Stage) ask(ctx context.Context, call *tools.Call) (*mcp.ElicitationResult, error) {
	if call.Client == nil {
		return nil, tools.ErrNoClient
	}
	props := map[string]any{}
	if s.cfg.Remember {
		props[RememberField] = map[string]any{
			"type": "boolean", "title": "Allow for this session",
			"description": fmt.Sprintf("Allow '%s' for the rest of this session without asking again.", call.Tool.Name()),
			"default":     false,
		}
	}
	return call.Client.Elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
		Message:         s.message(call),
		RequestedSchema: map[string]any{"type": "object", "properties": props},
	}})
}

// remember reports whether the accepted form asks to allow the tool for
// the session.
func remember(content any) bool {
	m, _ := content.(map[string]any)
	v, _ := m[RememberField].(bool)
	return v
}

// decided records the decision on the outcome of the call it let run.
func decided(out *tools.Outcome, decision string) *tools.Outcome {
	out.Consent = decision
	return out
}

// refused is the outcome of a call that did not run.
func refused(message, decision string, err error) *tools.Outcome {
	o := tools.Failure(tools.ClassConsent, message)
	o.Consent, o.Err = decision, err
	return o
}

// AllowedFor reports whether the user allowed the tool name for the rest
// of the session s.
func AllowedFor(s *session.Session, name string) bool {
	names, _ := session.Get(s, allowed)
	_, found := slices.BinarySearch(names, name)
	return found
}

// with returns the tools allowed for s, with name.
func with(s *session.Session, name string) []string {
	names, _ := session.Get(s, allowed)
	i, found := slices.BinarySearch(names, name)
	if found {
		return names
	}
	return slices.Insert(slices.Clip(names), i, name)
}
