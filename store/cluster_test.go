package store

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wink-mcp/wink-mcp/internal/natstest"
)

// TestClusterLeaderShutdown shuts down the leader of the state stream
// while several clients commit, and checks that every acknowledged commit
// is kept.
func TestClusterLeaderShutdown(t *testing.T) {
	c := sharedCluster(t)
	s := must[*JetStream](t)(Connect(ctxT(t), c.URLs(), Options{Replicas: 3, Name: storeName("shutdown"), Timeout: 30 * time.Second}))
	defer s.Close()
	underLoad(t, s, func(acked func() int64) {
		waitFor(t, 10*time.Second, func() bool { return acked() >= 30 })
		i := c.Index(streamLeader(t, s))
		c.Stop(i)
		t.Cleanup(func() {
			if err := c.Restart(i); err != nil {
				t.Error(err)
			}
		})
		after := acked()
		waitFor(t, 30*time.Second, func() bool { return acked() >= after+30 })
	})
}

// TestClusterNodeKilled kills, with SIGKILL, the leader of the state
// stream, a node running in a child process, while several clients
// commit, and checks that every acknowledged commit is kept. The other two
// nodes elect a new leader after the election timeout, seconds later.
func TestClusterNodeKilled(t *testing.T) {
	nodes := must[[]natstest.Node](t)(natstest.Nodes(t.TempDir(), 3))
	c := must[*natstest.Cluster](t)(natstest.Start(nodes, 2))
	defer c.Shutdown()
	child := startNode(t, nodes[2])
	s := must[*JetStream](t)(Connect(ctxT(t), c.URLs(), Options{Replicas: 3, Name: "kill", Timeout: 30 * time.Second}))
	defer s.Close()
	underLoad(t, s, func(acked func() int64) {
		waitFor(t, 10*time.Second, func() bool { return acked() >= 20 })
		waitFor(t, 20*time.Second, func() bool {
			if streamLeader(t, s) == nodes[2].Name {
				return true
			}
			req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": nodes[2].Name}})
			s.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.KILL_STATE", req, 2*time.Second)
			return false
		})
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		after := acked()
		waitFor(t, 60*time.Second, func() bool { return acked() >= after+20 })
	})
}

// startNode runs a cluster node in a child process, until the test ends.
func startNode(t *testing.T, n natstest.Node) *exec.Cmd {
	spec, _ := json.Marshal(n)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envNode+"="+string(spec))
	cmd.Stderr = os.Stderr
	out := must[io.ReadCloser](t)(cmd.StdoutPipe())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(out, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("node %s: %q, %v", n.Name, ready, err)
	}
	return cmd
}

// streamLeader returns the name of the server that leads the state stream.
func streamLeader(t *testing.T, s *JetStream) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	info, err := s.state.Info(ctx)
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// underLoad increments a counter session from several goroutines while
// during runs, then checks that the counter holds every acknowledged
// increment and no more than were attempted.
func underLoad(t *testing.T, s Store, during func(acked func() int64)) {
	ctx := ctxT(t)
	var acked, failed, highest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := increment(ctx, s, "counter")
				if err != nil {
					failed.Add(1)
					continue
				}
				acked.Add(1)
				for h := highest.Load(); int64(v) > h && !highest.CompareAndSwap(h, int64(v)); h = highest.Load() {
				}
			}
		})
	}
	func() {
		defer func() { close(stop); wg.Wait() }()
		during(acked.Load)
	}()
	c := loadCounter(t, s, "counter")
	t.Logf("%d increments acknowledged, %d failed, counter %d", acked.Load(), failed.Load(), c.N)
	if int64(c.N) < highest.Load() {
		t.Fatalf("counter %d, but %d was acknowledged: an acknowledged commit was lost", c.N, highest.Load())
	}
	if int64(c.N) > acked.Load()+failed.Load() {
		t.Fatalf("counter %d after %d increments", c.N, acked.Load()+failed.Load())
	}
}

// waitFor polls cond until it holds, or fails the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not done after %v", timeout)
		}
	}
}

// TestClusterOlderFormat: a store of an older format on a cluster, which
// no process holds as it holds a state dir, is not migrated: every
// process is refused, with both formats named, and the store is left as
// it was; a store of a newer format likewise.
func TestClusterOlderFormat(t *testing.T) {
	c := sharedCluster(t)
	ctx := ctxT(t)
	opts := Options{Replicas: 3, Name: storeName("format"), Timeout: 30 * time.Second, Migrations: []Step{{From: 1}}}
	s := must[*JetStream](t)(Connect(ctx, c.URLs(), opts))
	must[uint64](t)(s.Create(ctx, "s", []byte("head")))
	for _, f := range []string{"", strconv.Itoa(Format + 1)} {
		setFormat(t, ctx, s, f)
		_, err := Connect(ctx, c.URLs(), opts)
		wantErr(t, err, ErrIncompatible)
		want := []string{"holds format 1", "writes format " + strconv.Itoa(Format)}
		if f != "" {
			want = []string{"holds format " + f, "reads formats 1 to " + strconv.Itoa(Format)}
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		st := must[jetstream.Stream](t)(s.js.Stream(ctx, s.state.CachedInfo().Config.Name))
		if got := st.CachedInfo().Config.Metadata[formatKey]; got != f {
			t.Errorf("the refused store is marked %q, want %q", got, f)
		}
		if h := must[Head](t)(s.Load(ctx, "s")); string(h.Data) != "head" {
			t.Errorf("head %q", h.Data)
		}
	}
	s.Close()
}
