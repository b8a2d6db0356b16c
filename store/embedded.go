package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// OpenEmbedded starts a NATS server with JetStream inside the process,
// listening on no port and keeping its files under dir, and returns a store
// on it. Only one process at a time may use dir: it is locked for as long
// as the store is open. Of opts it does not use Replicas, CredsFile and TLS.
func OpenEmbedded(ctx context.Context, dir string, opts Options) (*JetStream, error) {
	opts = opts.withDefaults()
	opts.Replicas = 1
	ctx, cancel := deadline(ctx, opts.Timeout)
	defer cancel()

	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "wink-mcp",
		DontListen: true,
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: opts.SyncAlways,
		NoSigs:     true,
	})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("store: embedded server in %s: %w", dir, err)
	}
	srv.SetLoggerV2(serverLog{opts.Logger}, false, false, false)
	srv.Start()
	stop := func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		lock.Close()
	}
	wait := opts.Timeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) {
		stop()
		return nil, fmt.Errorf("store: embedded server in %s: not ready after %v: %w", dir, wait, ErrUnavailable)
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("wink-mcp"), nats.NoReconnect())
	if err != nil {
		stop()
		return nil, fmt.Errorf("store: connect to embedded server: %w", err)
	}
	s, err := open(ctx, nc, opts)
	if err != nil {
		nc.Close()
		stop()
		if errors.Is(err, ErrIncompatible) {
			return nil, fmt.Errorf("store: the state dir %s: %w; move it away to start afresh", dir, err)
		}
		return nil, err
	}
	s.srv, s.lock = srv, lock
	return s, nil
}

// lockDir creates dir if needed and takes the exclusive lock of its file
// "lock", which holds the id of the process that has it. The lock goes
// with the process, however it ends.
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: state dir %s cannot be created: %w", dir, err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: state dir %s is not writable: %w", dir, err)
	}
	ok, err := tryLock(f)
	if !ok {
		holder, _ := os.ReadFile(path)
		f.Close()
		if err == nil {
			return nil, fmt.Errorf("store: state dir %s is in use by process %s (lock file %s)",
				dir, strings.TrimSpace(string(holder)), path)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: state dir %s is not writable: %w", dir, err)
	}
	return f, nil
}

// serverLog passes the embedded server's warnings and errors to a slog
// logger and drops its notices, debug and trace lines.
type serverLog struct{ l *slog.Logger }

func (s serverLog) Noticef(string, ...any) {}
func (s serverLog) Debugf(string, ...any)  {}
func (s serverLog) Tracef(string, ...any)  {}
func (s serverLog) Warnf(format string, v ...any) {
	s.l.Warn(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLog) Errorf(format string, v ...any) {
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLog) Fatalf(format string, v ...any) {
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats-server")
}
