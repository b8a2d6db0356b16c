package consent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

type noParams struct{}

func tool(name string, a tools.Annotations) *tools.Tool {
	return tools.New(name, "A tool.", a, func(*tools.Context, noParams) (tools.Result[any], error) {
		return tools.OK[any]("Done.", nil), nil
	})
}

var (
	rm   = tool("rm", tools.Annotations{Title: "Remove", Destructive: true})
	edit = tool("edit", tools.Annotations{Title: "Edit"})
	read = tool("read", tools.Annotations{Title: "Read", ReadOnly: true, Destructive: true})
	all  = []*tools.Tool{rm, edit, read}
)

// user is a client whose user answers every elicitation with action and
// content, or whose requests fail with err; it keeps the questions.
type user struct {
	action  mcp.ElicitationResponseAction
	content map[string]any
	err     error
	asked   []mcp.ElicitationParams
}

func (u *user) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.asked = append(u.asked, req.Params)
	if u.err != nil {
		return nil, u.err
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: u.action, Content: u.content}}, nil
}

func (u *user) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("no model")
}

func (*user) CloseStream() {}

// run passes a call of t with args through the stage of cfg, with client
// (none when nil) and the session s, and runs its commit hooks when it
// succeeded. It returns the outcome and whether the tool ran.
func run(t *testing.T, cfg consent.Config, s *session.Session, tl *tools.Tool, client *user, args string, dry bool) (*tools.Outcome, bool) {
	t.Helper()
	st, err := consent.New(cfg, all, func(_ *tools.Tool, raw json.RawMessage) json.RawMessage {
		return json.RawMessage(strings.ReplaceAll(string(raw), "hunter2", "[REDACTED]"))
	})
	if err != nil {
		t.Fatal(err)
	}
	call := &tools.Call{Tool: tl, Args: json.RawMessage(args), Session: s, DryRun: dry}
	if client != nil {
		call.Client = client
	}
	ran := false
	h := st.Middleware()(func(context.Context, *tools.Call) *tools.Outcome {
		ran = true
		return &tools.Outcome{Message: "Done.", Success: true}
	})
	out := h(context.Background(), call)
	if out.Success {
		if err := call.RunCommitHooks(out); err != nil {
			t.Fatal(err)
		}
	}
	return out, ran
}

func newSession(t *testing.T) *session.Session {
	t.Helper()
	r := session.NewRegistry()
	st, err := consent.New(consent.Config{Enabled: true}, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Setup(r)
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStage: a marked tool runs only when the user accepts, or the client
// cannot ask and the fallback allows; each decision is on the outcome,
// and a refusal says why. Unmarked tools, and dry runs, run without a
// question.
func TestStage(t *testing.T) {
	on := consent.Config{Enabled: true}
	for _, tc := range []struct {
		name     string
		cfg      consent.Config
		tool     *tools.Tool
		client   *user
		dry      bool
		ran      bool
		decision string
		class    tools.ErrorClass
		message  string
	}{
		{"accepted", on, rm, &user{action: mcp.ElicitationResponseActionAccept}, false, true, consent.Accepted, "", ""},
		{"declined", on, rm, &user{action: mcp.ElicitationResponseActionDecline}, false, false, consent.Declined, tools.ClassConsent,
			"The user declined 'rm': it did not run, and nothing changed."},
		{"cancelled", on, rm, &user{action: mcp.ElicitationResponseActionCancel}, false, false, consent.Cancelled, tools.ClassConsent,
			"The user cancelled 'rm': it did not run, and nothing changed."},
		{"no client, deny", on, rm, nil, false, false, consent.DeniedByFallback, tools.ClassConsent,
			"Tool 'rm' needs the user's consent, and this client cannot ask for it: it did not run, and nothing changed."},
		{"no capability, deny", on, rm, &user{err: tools.ErrNoClient}, false, false, consent.DeniedByFallback, tools.ClassConsent, ""},
		{"no client, allow", consent.Config{Enabled: true, Fallback: consent.Allow}, rm, nil, false, true, consent.AllowedByFallback, "", ""},
		{"asking failed", consent.Config{Enabled: true, Fallback: consent.Allow}, rm, &user{err: errors.New("gone")}, false, false, consent.Failed, tools.ClassConsent,
			"Tool 'rm' needs the user's consent, and asking for it failed: it did not run, and nothing changed."},
		{"input required", on, rm, &user{err: tools.ErrInputRequired}, false, false, "", tools.ClassInputRequired, "Tool 'rm' waits for the user's consent."},
		{"dry run", on, rm, &user{action: mcp.ElicitationResponseActionDecline}, true, true, "", "", ""},
		{"not destructive", on, edit, &user{action: mcp.ElicitationResponseActionDecline}, false, true, "", "", ""},
		{"read-only", on, read, &user{action: mcp.ElicitationResponseActionDecline}, false, true, "", "", ""},
		{"named", consent.Config{Enabled: true, Tools: []string{"ed*"}}, edit, &user{action: mcp.ElicitationResponseActionDecline}, false, false, consent.Declined, tools.ClassConsent, ""},
		{"not named", consent.Config{Enabled: true, Tools: []string{"edit"}}, rm, &user{action: mcp.ElicitationResponseActionDecline}, false, true, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ran := run(t, tc.cfg, newSession(t), tc.tool, tc.client, `{"password":"hunter2"}`, tc.dry)
			if ran != tc.ran || out.Consent != tc.decision || out.Class != tc.class || tc.message != "" && out.Message != tc.message {
				t.Errorf("ran %v, decision %q, class %q, message %q", ran, out.Consent, out.Class, out.Message)
			}
			if tc.client == nil || len(tc.client.asked) == 0 {
				return
			}
			if q := tc.client.asked[0].Message; q != "Allow the tool '"+tc.tool.Name()+`' to run with these arguments?`+"\n"+`{"password":"[REDACTED]"}` {
				t.Errorf("asked %q", q)
			}
		})
	}
}

// TestRemember: offered, "allow for this session" is a field of the form;
// the session keeps the tool once the call that allowed it commits, and
// later calls run without a question. Not offered, the answer is not kept.
func TestRemember(t *testing.T) {
	cfg := consent.Config{Enabled: true, Remember: true}
	s := newSession(t)
	u := &user{action: mcp.ElicitationResponseActionAccept, content: map[string]any{consent.RememberField: true}}
	out, ran := run(t, cfg, s, rm, u, `{}`, false)
	if !ran || out.Consent != consent.AcceptedForSession || !consent.AllowedFor(s, "rm") {
		t.Fatalf("ran %v, decision %q, allowed %v", ran, out.Consent, consent.AllowedFor(s, "rm"))
	}
	if props := u.asked[0].RequestedSchema.(map[string]any)["properties"].(map[string]any); props[consent.RememberField] == nil {
		t.Errorf("the form does not offer to remember: %v", props)
	}
	out, ran = run(t, cfg, s, rm, u, `{}`, false)
	if !ran || out.Consent != consent.Remembered || len(u.asked) != 1 {
		t.Errorf("second call: ran %v, decision %q, %d questions", ran, out.Consent, len(u.asked))
	}

	other := newSession(t)
	out, _ = run(t, consent.Config{Enabled: true}, other, rm, u, `{}`, false)
	if out.Consent != consent.Accepted || consent.AllowedFor(other, "rm") {
		t.Errorf("not offered: decision %q, allowed %v", out.Consent, consent.AllowedFor(other, "rm"))
	}
}

// TestConfig: a name that no tool has, a bad glob or fallback is an error
// naming its key, enabled or not; disabled, there is no stage.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  consent.Config
		want string
	}{
		{consent.Config{Tools: []string{"nope"}}, `tools: no tool is called "nope"`},
		{consent.Config{Enabled: true, Tools: []string{"[x"}}, `tools: "[x" is not a glob: syntax error in pattern`},
		{consent.Config{Fallback: "maybe"}, `fallback: "maybe" is not a fallback (want deny, allow or console)`},
	} {
		if _, err := consent.New(tc.cfg, all, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.cfg, err, tc.want)
		}
	}
	st, err := consent.New(consent.Config{Tools: []string{"r*"}}, all, nil)
	if st != nil || err != nil || st.Middleware() != nil {
		t.Errorf("disabled: %v, %v", st, err)
	}
}
