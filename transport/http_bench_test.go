package transport

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// BenchmarkHTTPSetupPlan measures planning_setup_plan calls over Streamable
// HTTP from 64 concurrent sessions.
func BenchmarkHTTPSetupPlan(b *testing.B) {
	f := newHTTPFixture(b, HTTPOptions{})
	const sessions = 64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * sessions}}
	clients := make([]*hclient, sessions)
	for i := range clients {
		clients[i] = newClient(b, f.url)
		clients[i].hc = hc
		clients[i].initialize()
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/sessions + 1
	for i, c := range clients {
		wg.Go(func() {
			for n := range per {
				c.callText("planning_setup_plan", map[string]any{"objective": fmt.Sprintf("s%d c%d", i, n), "initial_steps": []string{"a", "b", "c"}})
			}
		})
	}
	wg.Wait()
}
