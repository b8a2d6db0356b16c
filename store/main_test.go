package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/natstest"
)

// The test binary doubles as the child processes of the crash tests: with
// one of these variables set, TestMain runs that role instead of the tests.
const (
	envCommitter = "STORE_TEST_COMMITTER" // a state dir: commit increments there until killed
	envNode      = "STORE_TEST_NODE"      // a natstest.Node in JSON: run that cluster node until killed
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCommitter); dir != "" {
		os.Exit(runCommitter(dir))
	}
	if spec := os.Getenv(envNode); spec != "" {
		os.Exit(runNode(spec))
	}
	code := m.Run()
	if shared.c != nil {
		shared.c.Shutdown()
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// runCommitter opens the embedded store in dir and increments the counter
// session there, printing each value once its commit is acknowledged.
func runCommitter(dir string) int {
	ctx := context.Background()
	s, err := OpenEmbedded(ctx, dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		v, err := increment(ctx, s, "counter")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d\n", v)
	}
}

// runNode runs a cluster node described by spec until the process is
// killed. It prints "ready" once clients can connect.
func runNode(spec string) int {
	var n natstest.Node
	if err := json.Unmarshal([]byte(spec), &n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := n.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	select {}
}

// counterHead is the head of a counter session: its value, and the blob
// that holds the value's text.
type counterHead struct {
	N    int    `json:"n"`
	Blob string `json:"blob"`
}

// increment adds one to a counter session by compare-and-swap, creating it
// at 0 if needed, retrying on conflicts, and returns the value it
// committed. The value's text goes in a blob the head refers to.
func increment(ctx context.Context, s Store, session string) (int, error) {
	for {
		h, err := s.Load(ctx, session)
		if errors.Is(err, ErrNotFound) {
			if _, err := s.Create(ctx, session, []byte(`{"n":0}`)); err != nil && !errors.Is(err, ErrExists) {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		var c counterHead
		if err := json.Unmarshal(h.Data, &c); err != nil {
			return 0, err
		}
		c.N++
		text := []byte(strconv.Itoa(c.N))
		c.Blob = Hash(text)
		head, _ := json.Marshal(c)
		_, err = s.Commit(ctx, session, h.Rev, head, map[string][]byte{c.Blob: text})
		if errors.Is(err, ErrConflict) {
			continue
		}
		return c.N, err
	}
}

// shared is the 3-node cluster that the cluster tests share, started by
// the first test that needs it and stopped by TestMain.
var shared struct {
	once sync.Once
	dir  string
	c    *natstest.Cluster
	err  error
}

// stores numbers the stores made on the shared cluster.
var stores atomic.Int32

// storeName returns a name for a new store on the shared cluster.
func storeName(prefix string) string { return fmt.Sprintf("%s%d", prefix, stores.Add(1)) }

// sharedCluster returns the shared cluster, starting it if needed.
func sharedCluster(t testing.TB) *natstest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "store-cluster-")
		if shared.err != nil {
			return
		}
		var nodes []natstest.Node
		nodes, shared.err = natstest.Nodes(shared.dir, 3)
		if shared.err == nil {
			shared.c, shared.err = natstest.Start(nodes)
		}
	})
	if shared.err != nil {
		t.Fatalf("start cluster: %v", shared.err)
	}
	return shared.c
}
