package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoreDown: the server's external NATS store, a 3-node cluster,
// stops. A call that changes state gets "Session store unavailable; call again. …" once its deadline
// passes, the server goes on answering, and when the store is back the
// session continues, with nothing of the failed call in it.
func TestStoreDown(t *testing.T) {
	ns := startNATS(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("deadline: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--config", cfg, "--store", ns.URLs())
	c := &httpClient{url: s.url}
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)

	ns.Shutdown()
	r := c.call(t, "planning_add_step", with(h, map[string]any{"steps": []string{"lost"}}))
	if !r.IsError || !strings.HasPrefix(r.text(), "Session store unavailable; call again. ") {
		t.Fatalf("a call while the store is down: %+v", r)
	}
	if res := c.post(t, "tools/list", "", map[string]any{"_meta": modernMeta()}); !strings.Contains(string(res), "planning_read_plan") {
		t.Fatalf("tools/list while the store is down: %s", res)
	}

	for i := range 3 { // startNATS's nodes
		if err := ns.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	var plan result
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if plan = c.call(t, "planning_read_plan", with(h, map[string]any{})); !plan.IsError {
			break
		}
	}
	if plan.IsError || !strings.Contains(plan.text(), "1 [pending] draft") || strings.Contains(plan.text(), "lost") {
		t.Fatalf("the plan once the store is back: %+v", plan)
	}
	if r := c.call(t, "planning_add_step", with(h, map[string]any{"steps": []string{"review"}})); r.IsError || !strings.Contains(r.text(), "1 [pending] draft\n2 [pending] review\n") {
		t.Fatalf("a call once the store is back: %+v", r)
	}
}
