// Package natstest runs clusters of NATS servers with JetStream on
// loopback for tests: of the session store against a real cluster, and of
// server replicas that share one. Nodes run in the test's process, or in
// a child process that a test starts and kills.
//
// Only test files import it.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Node describes one server of a cluster. It marshals as JSON, for a child
// process to run it.
type Node struct {
	Name        string
	Dir         string // JetStream's files
	Port        int    // client port
	ClusterPort int    // route port
	Peers       []int  // route ports of the other nodes
}

// URL is the node's client URL.
func (n Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// Start starts the node in this process and waits until it takes
// clients. Its clients listen on a port: routing waits for the client
// listener, so a clustered server cannot be embedded without one.
func (n Node) Start() (*server.Server, error) {
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

// Nodes describes a cluster of n nodes on free loopback ports, with their
// files under dir.
func Nodes(dir string, n int) ([]Node, error) {
	var ports []int
	for range 2 * n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{
			Name:        fmt.Sprintf("n%d", i),
			Dir:         filepath.Join(dir, fmt.Sprintf("n%d", i)),
			Port:        ports[2*i],
			ClusterPort: ports[2*i+1],
		}
		for j := range n {
			if j != i {
				nodes[i].Peers = append(nodes[i].Peers, ports[2*j+1])
			}
		}
	}
	return nodes, nil
}

// Cluster is a running cluster: the nodes that run in this process, and
// those the test runs elsewhere.
type Cluster struct {
	nodes []Node
	mu    sync.Mutex
	srvs  []*server.Server // nil for a node that is stopped or runs elsewhere
}

// Start starts the nodes in this process, at once, except those whose
// index is in elsewhere, and waits until each takes clients.
func Start(nodes []Node, elsewhere ...int) (*Cluster, error) {
	c := &Cluster{nodes: nodes, srvs: make([]*server.Server, len(nodes))}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		if slices.Contains(elsewhere, i) {
			continue
		}
		wg.Go(func() { c.srvs[i], errs[i] = n.Start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// URLs returns the client URLs of every node, comma-separated, as the
// store's Connect and the server's --store take them.
func (c *Cluster) URLs() string {
	var u []string
	for _, n := range c.nodes {
		u = append(u, n.URL())
	}
	return strings.Join(u, ",")
}

// Index returns the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// Stop shuts node i down gracefully, if it runs in this process.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	srv := c.srvs[i]
	c.srvs[i] = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts node i again, in this process, on its files.
func (c *Cluster) Restart(i int) error {
	srv, err := c.nodes[i].Start()
	c.mu.Lock()
	c.srvs[i] = srv
	c.mu.Unlock()
	return err
}

// Shutdown stops every node that runs in this process.
func (c *Cluster) Shutdown() {
	for i := range c.srvs {
		c.Stop(i)
	}
}
