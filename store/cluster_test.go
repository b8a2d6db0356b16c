package store

import (
	"context"
	"encoding/json"
	"errors"
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

// TestClusterFormats: a store of an older format on a cluster is migrated
// by one process, which holds the migration's lease in the store, while
// another opening at once waits for it and then opens the store migrated;
// a store of a newer format is refused, both formats named, and left as
// it was.
func TestClusterFormats(t *testing.T) {
	c := sharedCluster(t)
	ctx := ctxT(t)
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	opts := Options{Replicas: 3, Name: storeName("format"), Timeout: 30 * time.Second, Migrations: []Step{{From: 1, Migrate: func(context.Context, *Migration) error {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	}}}}
	opts.Migrations = throughFormat(opts.Migrations...)
	s := must[*JetStream](t)(Connect(ctx, c.URLs(), opts))
	defer s.Close()
	must[uint64](t)(s.Create(ctx, "s", []byte("head")))
	must[*jetstream.PubAck](t)(s.js.Publish(ctx, s.logSubject("s"), []byte(`{"call_id":"1"}`)))
	setFormat(t, ctx, s, "")

	type opened struct {
		s   *JetStream
		err error
	}
	open := func() chan opened {
		ch := make(chan opened, 1)
		go func() {
			s, err := Connect(ctx, c.URLs(), opts)
			ch <- opened{s, err}
		}()
		return ch
	}
	first := open()
	<-started
	second := open()
	close(release)
	for _, ch := range []chan opened{first, second} {
		o := <-ch
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.s.Close()
		if got := must[[][]byte](t)(o.s.ReadLog(ctx, "s", 10)); len(got) != 1 || string(got[0]) != `{"call_id":"1"}` {
			t.Errorf("the log after the migration: %q", got)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step ran %d times, want once", n)
	}
	if _, _, err := s.Task(ctx, leaseOwner, leaseID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the lease after the migration: %v", err)
	}

	setFormat(t, ctx, s, strconv.Itoa(Format+1))
	_, err := Connect(ctx, c.URLs(), opts)
	wantErr(t, err, ErrIncompatible)
	for _, w := range []string{"holds format " + strconv.Itoa(Format+1), "reads formats 1 to " + strconv.Itoa(Format)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	st := must[jetstream.Stream](t)(s.js.Stream(ctx, s.state.CachedInfo().Config.Name))
	if got := st.CachedInfo().Config.Metadata[formatKey]; got != strconv.Itoa(Format+1) {
		t.Errorf("the refused store is marked %q", got)
	}
	if h := must[Head](t)(s.Load(ctx, "s")); string(h.Data) != "head" {
		t.Errorf("head %q", h.Data)
	}
}
