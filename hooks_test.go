package main

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/hooks"
)

// TestHooksOverStdio: the audit file of the configuration records the
// calls of the local user, and a tool only another subject may call is
// refused.
func TestHooksOverStdio(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "wink.yaml")
	yaml := "sections: [planning]\nhooks:\n  audit:\n    file: " + audit + "\n    fsync: always\n" +
		"  tools:\n    planning_setup_plan:\n      authorise: {allow: [\"subject:someone-else-entirely\"]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, "--config", cfg)
	c.expect("planning_setup_plan", `{"objective":"x"}`, "Not authorised to call 'planning_setup_plan': requires subject someone-else-entirely.", true)
	c.expect("planning_read_plan", `{}`, "No plan is currently initialised.", true)
	recs, err := hooks.ReadAuditFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ErrorClass != "unauthorised" || recs[1].Tool != "planning_read_plan" || recs[0].Subject == "" {
		t.Errorf("audit records %+v", recs)
	}
}

func TestHooksConfigErrors(t *testing.T) {
	for yaml, want := range map[string]string{
		"hooks:\n  tools:\n    nope: {}\n":                                         `wink.yaml:3: hooks.tools.nope: unknown tool "nope"`,
		"hooks:\n  rate_limit: {rate: -1}\n":                                       "wink.yaml:2: hooks.rate_limit.rate: must be at least 0, got -1",
		"hooks:\n  output: {redact: ['a(']}\n":                                     `wink.yaml:2: hooks.output.redact[0]: invalid regular expression "a(": missing closing )`,
		"hooks:\n  tools:\n    planning_add_step:\n      retry: {enabled: true}\n": `wink.yaml:4: hooks.tools.planning_add_step.retry.enabled: tool "planning_add_step" is not annotated idempotent, so it may not be retried`,
	} {
		path := filepath.Join(t.TempDir(), "wink.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := build(&flags{config: path}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			a.close()
			t.Errorf("%q: built", yaml)
			continue
		}
		if got := strings.ReplaceAll(err.Error(), path, "wink.yaml"); got != want {
			t.Errorf("%q:\n got %s\nwant %s", yaml, got, want)
		}
	}
}

// TestMetricsHandler: the server offers /metrics for an HTTP transport to
// mount, in the Prometheus text format.
func TestMetricsHandler(t *testing.T) {
	a, err := build(&flags{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	srv := a.srv
	h := srv.Handlers()["/metrics"]
	if h == nil {
		t.Fatal("no /metrics handler")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("/metrics: %s", rec.Body.String())
	}
}
