package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// TestStoreDown: the server's external NATS store stops. A call that
// changes state gets "Session store unavailable: …" once its deadline
// passes, the server goes on answering, and when the store is back the
// session continues, with nothing of the failed call in it.
func TestStoreDown(t *testing.T) {
	dir, port := t.TempDir(), freePort(t)
	ns := startNATS(t, dir, port)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("deadline: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--config", cfg, "--store", fmt.Sprintf("nats://127.0.0.1:%d", port))
	c := &httpClient{url: s.url}
	h := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}}).session(t)

	ns.Shutdown()
	ns.WaitForShutdown()
	r := c.call(t, "planning_add_step", with(h, map[string]any{"steps": []string{"lost"}}))
	if !r.IsError || !strings.HasPrefix(r.text(), "Session store unavailable: ") {
		t.Fatalf("a call while the store is down: %+v", r)
	}
	if res := c.post(t, "tools/list", "", map[string]any{"_meta": modernMeta()}); !strings.Contains(string(res), "planning_read_plan") {
		t.Fatalf("tools/list while the store is down: %s", res)
	}

	startNATS(t, dir, port)
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

// startNATS starts a NATS server with JetStream in this process, storing
// under dir and listening on port, until the test ends.
func startNATS(t *testing.T, dir string, port int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return ns
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
