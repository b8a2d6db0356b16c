package store

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Connect returns a store on an external NATS cluster with JetStream, at
// url ("nats://host:port", several separated by commas). Of opts it uses
// CredsFile and TLS to connect and Replicas for its streams; a fresh
// cluster is waited for until it has elected the streams' leaders or ctx
// ends. The connection is kept across failovers; calls made while it is
// down fail at their deadline with ErrUnavailable.
func Connect(ctx context.Context, url string, opts Options) (*JetStream, error) {
	opts = opts.withDefaults()
	ctx, cancel := deadline(ctx, opts.Timeout)
	defer cancel()
	nopts := []nats.Option{nats.Name("wink-mcp"), nats.MaxReconnects(-1)}
	if opts.CredsFile != "" {
		nopts = append(nopts, nats.UserCredentials(opts.CredsFile))
	}
	if opts.TLS != nil {
		nopts = append(nopts, nats.Secure(opts.TLS))
	}
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("store: connect to %s: %w: %w", url, ErrUnavailable, err)
	}
	s, err := open(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}
