package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/sections"
	winkserver "github.com/wink-mcp/wink-mcp/server"
)

// serving is an HTTP transport serving on a real loopback listener, as
// main runs it.
type serving struct {
	*httpFixture
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned
	err    error         // what Serve returned
}

func startServing(t *testing.T, opts HTTPOptions) *serving {
	t.Helper()
	f := &httpFixture{started: make(chan string, 100), release: make(chan struct{})}
	tree, err := sections.NewTree(planning.New(planning.React), f.testSection())
	if err != nil {
		t.Fatal(err)
	}
	f.srv, err = winkserver.New(winkserver.Options{Name: "t", Version: "1", Tree: tree, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	f.ht, err = NewHTTP(f.srv.MCP(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{httpFixture: f, cancel: cancel, done: make(chan struct{})}
	go func() { s.err = f.ht.Serve(ctx, ln); close(s.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(failsafe):
		}
	})
	return s
}

func (s *serving) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(failsafe):
		t.Fatal("Serve did not return")
		return nil
	}
}

// TestShutdownLetsCallsFinish starts calls on several sessions, begins the
// shutdown while they run, and checks that new requests are refused, that
// each call then completes and commits, and that Serve returns nil with
// every session ended.
func TestShutdownLetsCallsFinish(t *testing.T) {
	s := startServing(t, HTTPOptions{DrainTimeout: failsafe})
	const n = 4
	clients := make([]*hclient, n)
	results := make([]chan []msg, n)
	for i := range clients {
		clients[i] = newClient(t, s.url)
		clients[i].initialize()
		results[i] = make(chan []msg, 1)
		go func() { results[i] <- clients[i].call("block", map[string]any{"token": fmt.Sprint(i)}) }()
	}
	for range n {
		s.waitStarted(t)
	}
	s.cancel()
	// New work is refused while the calls drain: 503 on a kept-alive
	// connection, or no connection at all.
	waitFor(t, "new requests to be refused", func() bool {
		probe := newClient(t, s.url)
		probe.hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest(http.MethodGet, s.url+"/healthz", nil)
		_, err := probe.hc.Do(req)
		if err != nil {
			return true
		}
		resp := clients[0].post(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "ping"})
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	select {
	case <-s.done:
		t.Fatalf("Serve returned with calls in flight: %v", s.err)
	default:
	}
	close(s.release)
	for i := range n {
		msgs := <-results[i]
		if got := msgs[len(msgs)-1].text(t); got != fmt.Sprintf("released %d", i) {
			t.Errorf("call %d: %q", i, got)
		}
	}
	if err := s.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if s.srv.Sessions().Len() != 0 || s.ht.sessionCount() != 0 {
		t.Errorf("sessions left: server %d, transport %d", s.srv.Sessions().Len(), s.ht.sessionCount())
	}
}

// TestShutdownDrainIsBounded leaves calls that would never finish: after
// the drain time they are cancelled, each fails whole (its state
// restored), and Serve returns.
func TestShutdownDrainIsBounded(t *testing.T) {
	s := startServing(t, HTTPOptions{DrainTimeout: 50 * time.Millisecond})
	const n = 3
	var wg sync.WaitGroup
	texts := make([]string, n)
	for i := range n {
		c := newClient(t, s.url)
		c.initialize()
		wg.Go(func() {
			msgs := c.call("block", map[string]any{"token": fmt.Sprint(i)})
			texts[i] = msgs[len(msgs)-1].text(t)
		})
	}
	for range n {
		s.waitStarted(t)
	}
	s.cancel()
	if err := s.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	wg.Wait()
	for i, txt := range texts {
		if !strings.Contains(txt, "was cancelled") {
			t.Errorf("call %d: %q, want a cancelled call", i, txt)
		}
	}
}
