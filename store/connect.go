package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
)

// Connect returns a store on an external NATS cluster with JetStream, at
// url ("nats://host:port", several separated by commas). Of opts it uses
// CredsFile and TLS to connect and Replicas for its streams; a fresh
// cluster is waited for until it has elected the streams' leaders or ctx
// ends. The connection is kept across failovers; calls made while it is
// down are tried again until their deadline, then fail with
// ErrUnavailable. A store of an older format is migrated by the process
// that takes the migration's lease in it (see Format); the others wait.
func Connect(ctx context.Context, url string, opts Options) (*JetStream, error) {
	opts = opts.withDefaults()
	ctx, cancel := deadline(ctx, opts.Timeout)
	defer cancel()
	nopts := connOptions(opts.Logger)
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
	s, err := open(ctx, nc, opts, func(ctx context.Context, s *JetStream) (func(), bool, error) { return s.lease(ctx) })
	if err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

// connOptions are the options of every connection of a store: it
// reconnects for as long as it is open, and a publish fails at once while
// it is down, rather than wait in a buffer to be sent when it is back (a
// call answered as failed must not land later; calls try again themselves,
// retry). What goes wrong on it between requests (a write to a server
// that went away) is logged to logger; nats.go would write it to stderr.
func connOptions(logger *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.Name("wink-mcp"), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				logger.Warn("session store connection", "subject", sub.Subject, "err", err)
				return
			}
			logger.Warn("session store connection", "err", err)
		}),
	}
}
