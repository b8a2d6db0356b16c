package server_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
)

// denyError refuses every call of probe_error.
type denyError struct{}

func (denyError) Name() string { return "deny_error" }
func (denyError) Check(c *tools.Call) error {
	if c.Tool.Name() == "probe_error" {
		return errors.New("no errors")
	}
	return nil
}
func (denyError) OnResult(*tools.Call, *tools.Outcome) error { return nil }

// TestConsentStage: the consent stage runs after the policies (a call they
// refuse asks nothing) and before the transaction: "allow for this
// session", given for a call that then fails, is rolled back with it, and
// the next call asks again; given for one that succeeds, it is kept. A
// client that cannot ask gets the fallback.
func TestConsentStage(t *testing.T) {
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	st, err := consent.New(consent.Config{Enabled: true, Tools: []string{"probe_add", "probe_fail", "probe_error"}, Remember: true}, tree.Tools(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "t", Version: "1", Tree: tree,
		Policies: []policy.Policy{denyError{}}, Consent: st, Setup: st.Setup,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := mcptest.NewClient(t, srv.MCP(), "")
	meta := modern(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}})

	r := callModern(t, c, map[string]any{"name": "probe_error", "arguments": map[string]any{"by": 1}, "_meta": meta})
	if r.ResultType != "complete" || !r.IsError || !strings.Contains(r.Text(), "no errors") {
		t.Fatalf("refused by a policy: %+v", r)
	}

	// allowed runs tool with the user's "allow for this session" and
	// returns the result.
	allowed := func(tool string, args map[string]any) mrtrResult {
		t.Helper()
		call := map[string]any{"name": tool, "arguments": args, "_meta": meta}
		r := callModern(t, c, call)
		if r.ResultType != "input_required" || r.InputRequests["wink-1"].Method != "elicitation/create" {
			t.Fatalf("%s asked nothing: %+v", tool, r)
		}
		call["requestState"] = r.RequestState
		call["inputResponses"] = map[string]any{"wink-1": map[string]any{"action": "accept", "content": map[string]any{consent.RememberField: true}}}
		return callModern(t, c, call)
	}
	r = allowed("probe_add", map[string]any{"by": 1})
	h := r.Session()
	if r.IsError || h == "" {
		t.Fatalf("probe_add: %+v", r)
	}
	counted := func() string {
		t.Helper()
		return callModern(t, c, map[string]any{"name": "probe_get", "arguments": map[string]any{"session": h}, "_meta": meta}).Said()
	}
	r = callModern(t, c, map[string]any{"name": "probe_add", "arguments": map[string]any{"by": 1, "session": h}, "_meta": meta})
	if r.ResultType != "complete" || r.IsError {
		t.Errorf("probe_add, allowed for the session, asked again: %+v", r)
	}
	if r = allowed("probe_fail", map[string]any{"by": 1, "session": h}); !r.IsError {
		t.Errorf("probe_fail: %+v", r)
	}
	if got := counted(); got != "Count.\n\n{\"count\":2}" {
		t.Errorf("after a failed call: %q", got)
	}
	// Asked again: the allowance was rolled back with the call.
	allowed("probe_fail", map[string]any{"by": 1, "session": h})

	// A legacy session that cannot take elicitation requests gets the
	// fallback.
	legacy := mcptest.NewClient(t, srv.MCP(), "legacy").Call(t.Context(), "probe_add", map[string]any{"by": 1}, nil)
	if !legacy.IsError || !strings.Contains(legacy.Text(), "this client cannot ask for it") {
		t.Errorf("legacy without elicitation: %+v", legacy)
	}
}
