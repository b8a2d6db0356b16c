package hooks

import (
	"context"
	"slices"
	"testing"
)

func TestAuthoriseHidesAndRefuses(t *testing.T) {
	cfg := Config{
		Authorise: AuthoriseConfig{Allow: []string{"scope:probe.read", "subject:root"}, Deny: []string{"subject:mallory"}},
		Tools: map[string]ToolConfig{
			"p_write": {Authorise: &AuthoriseConfig{Allow: []string{"scope:probe.write"}}},
			"p_read2": {Authorise: &AuthoriseConfig{Allow: []string{"*"}, Deny: []string{"scope:guest"}}},
		},
	}
	h := newHarness(t, cfg)
	cs := h.client("s1")
	tests := []struct {
		name   string
		ctx    context.Context
		tool   string
		want   string // "" for allowed
		listed bool
	}{
		{"scope allows", as("alice", "probe.read"), "p_read", "", true},
		{"subject allows", as("root"), "p_read", "", true},
		{"missing scope", as("bob"), "p_read", "Not authorised to call 'p_read': requires one of: scope probe.read, subject root.", false},
		{"anonymous", context.Background(), "p_read", "Not authorised to call 'p_read': requires one of: scope probe.read, subject root.", false},
		{"deny wins over allow", as("mallory", "probe.read"), "p_read", "Not authorised to call 'p_read': subject 'mallory' is denied.", false},
		{"tool allow replaces the server's", as("alice", "probe.read"), "p_write", "Not authorised to call 'p_write': requires scope probe.write.", false},
		{"tool allow", as("carol", "probe.write"), "p_write", "", true},
		{"server deny still applies", as("mallory", "probe.write"), "p_write", "Not authorised to call 'p_write': subject 'mallory' is denied.", false},
		{"anyone", context.Background(), "p_read2", "", true},
		{"tool deny adds", as("g", "guest"), "p_read2", "Not authorised to call 'p_read2': scope 'guest' is denied.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slices.Contains(cs.ToolNames(tt.ctx), tt.tool); got != tt.listed {
				t.Errorf("%s listed = %v, want %v", tt.tool, got, tt.listed)
			}
			args := map[string]any{}
			if tt.tool == "p_write" {
				args["by"] = 1
			}
			r := cs.Call(tt.ctx, tt.tool, args, nil)
			if tt.want == "" {
				if r.IsError {
					t.Fatalf("refused: %s", r.Text())
				}
				return
			}
			if !r.IsError || r.Text() != tt.want {
				t.Fatalf("got isError=%v %q, want %q", r.IsError, r.Text(), tt.want)
			}
			ev := h.last(cs)
			if ev.Tool != tt.tool || ev.ErrorClass != "unauthorised" || ev.Retries != 0 {
				t.Errorf("recorded %+v, want a refusal of class unauthorised that never ran", ev)
			}
		})
	}
}

// TestAuthoriseOffHidesNothing: with no allow or deny entries the stage is
// off and every tool is listed.
func TestAuthoriseOffHidesNothing(t *testing.T) {
	h := newHarness(t, Defaults())
	if h.hooks.Authorise() != nil {
		t.Error("authorise is on by default")
	}
	if got := h.client("s").ToolNames(context.Background()); len(got) != len(h.srv.Tools()) {
		t.Errorf("listed %v, want every tool", got)
	}
}
