package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The test binary doubles as the child processes of the crash tests: with
// one of these variables set, TestMain runs that role instead of the tests.
const (
	envCommitter = "STORE_TEST_COMMITTER" // a state dir: commit increments there until killed
	envNode      = "STORE_TEST_NODE"      // a nodeSpec in JSON: run that cluster node until killed
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
		shared.c.shutdown()
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
	var n nodeSpec
	if err := json.Unmarshal([]byte(spec), &n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := n.start(); err != nil {
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

// nodeSpec describes one server of a test cluster.
type nodeSpec struct {
	Name        string
	Dir         string
	Port        int   // client port
	ClusterPort int   // route port
	Peers       []int // route ports of the other nodes
}

func (n nodeSpec) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// start starts the node in this process and waits until it takes clients.
func (n nodeSpec) start() (*server.Server, error) {
	var routes []*url.URL
	for _, p := range n.Peers {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: n.Name,
		Host:       "127.0.0.1",
		Port:       n.Port,
		JetStream:  true,
		StoreDir:   n.Dir,
		NoSigs:     true,
		Cluster:    server.ClusterOpts{Name: "wink-test", Host: "127.0.0.1", Port: n.ClusterPort},
		Routes:     routes,
	})
	if err != nil {
		return nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("node %s not ready", n.Name)
	}
	return srv, nil
}

// testCluster is a cluster of NATS servers on loopback, with client ports
// (routing waits for a client listener, so DontListen is not possible),
// some of which may run in child processes.
type testCluster struct {
	specs []nodeSpec
	mu    sync.Mutex
	srvs  []*server.Server // nil for a node that is stopped or in a child
}

// clusterSpecs describes n nodes with free ports, their files under dir.
func clusterSpecs(dir string, n int) ([]nodeSpec, error) {
	var ports []int
	for range 2 * n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	specs := make([]nodeSpec, n)
	for i := range specs {
		specs[i] = nodeSpec{
			Name:        fmt.Sprintf("n%d", i),
			Dir:         filepath.Join(dir, fmt.Sprintf("n%d", i)),
			Port:        ports[2*i],
			ClusterPort: ports[2*i+1],
		}
		for j := range n {
			if j != i {
				specs[i].Peers = append(specs[i].Peers, ports[2*j+1])
			}
		}
	}
	return specs, nil
}

// startCluster starts the nodes of specs in this process, except those
// whose index is in children.
func startCluster(specs []nodeSpec, children ...int) (*testCluster, error) {
	c := &testCluster{specs: specs, srvs: make([]*server.Server, len(specs))}
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i, n := range specs {
		if slices.Contains(children, i) {
			continue
		}
		wg.Go(func() { c.srvs[i], errs[i] = n.start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.shutdown()
			return nil, err
		}
	}
	return c, nil
}

// urls returns the client URLs of every node, for Connect.
func (c *testCluster) urls() string {
	var u []string
	for _, n := range c.specs {
		u = append(u, n.url())
	}
	return strings.Join(u, ",")
}

// index returns the index of the node named name.
func (c *testCluster) index(name string) int {
	for i, n := range c.specs {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// stop shuts node i down gracefully, if it runs in this process.
func (c *testCluster) stop(i int) {
	c.mu.Lock()
	srv := c.srvs[i]
	c.srvs[i] = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// restart starts node i again, in this process, on its files.
func (c *testCluster) restart(i int) error {
	srv, err := c.specs[i].start()
	c.mu.Lock()
	c.srvs[i] = srv
	c.mu.Unlock()
	return err
}

// shutdown stops every node that runs in this process.
func (c *testCluster) shutdown() {
	for i := range c.srvs {
		c.stop(i)
	}
}

// shared is the 3-node cluster that the cluster tests share, started by
// the first test that needs it and stopped by TestMain.
var shared struct {
	once sync.Once
	dir  string
	c    *testCluster
	err  error
}

// stores numbers the stores made on the shared cluster.
var stores atomic.Int32

// storeName returns a name for a new store on the shared cluster.
func storeName(prefix string) string { return fmt.Sprintf("%s%d", prefix, stores.Add(1)) }

// sharedCluster returns the shared cluster, starting it if needed.
func sharedCluster(t testing.TB) *testCluster {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "store-cluster-")
		if shared.err != nil {
			return
		}
		var specs []nodeSpec
		specs, shared.err = clusterSpecs(shared.dir, 3)
		if shared.err == nil {
			shared.c, shared.err = startCluster(specs)
		}
	})
	if shared.err != nil {
		t.Fatalf("start cluster: %v", shared.err)
	}
	return shared.c
}
