package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// OpenEmbedded returns a store on the state directory dir, which any number
// of processes may open at once. The process that holds dir's lock runs a
// NATS server with JetStream inside itself, keeping its files under dir and
// listening on loopback for the others; every other process reaches that
// server there, presenting the token of dir's credential file. When the
// holder goes, however it ends, the other processes' connections drop and
// each tries the lock as it reconnects: the one that takes it starts the
// server on dir's files, and the others reconnect to it. Calls made
// meanwhile are tried again until their deadline, then fail with
// ErrUnavailable. A holder whose store has been idle for Options.Dormancy
// stops its server and releases dir until its next call, and another
// process idle as long closes its connection until its next call
// (dormant.go).
//
// Of opts it does not use Replicas, CredsFile and TLS.
func OpenEmbedded(ctx context.Context, dir string, opts Options) (*JetStream, error) {
	opts = opts.withDefaults()
	opts.Replicas = 1
	ctx, cancel := deadline(ctx, opts.Timeout)
	defer cancel()

	h, err := newHost(dir, opts)
	if err != nil {
		return nil, err
	}
	nc, err := h.connect(ctx)
	if err != nil {
		h.close()
		return nil, err
	}
	s, err := open(ctx, nc, opts, func(context.Context, *JetStream) (func(), bool, error) {
		return func() {}, h.srv.Load() != nil, nil
	})
	if err != nil {
		nc.Close()
		h.close()
		if errors.Is(err, ErrIncompatible) {
			return nil, fmt.Errorf("store: the state dir %s: %w; open it with a version of wink-mcp that reads its format, or move it away to start afresh", dir, err)
		}
		return nil, err
	}
	s.host = h
	if err := h.listen(nc); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: state dir %s: %w: %w", dir, ErrUnavailable, err)
	}
	h.mu.Lock()
	h.nc = nc
	h.mu.Unlock()
	h.leave(false) // the opening, which newHost counted as a call
	return s, nil
}

// reconnectWait is the pause between attempts to reconnect (or to take the
// server over) after a process's connection to the server of a state
// directory dropped.
const reconnectWait = 50 * time.Millisecond

// helloSubject is the subject on which a process that reaches the server
// of a state directory over loopback says so, each time it connects, for
// the holder to learn that it shares the directory (share) when it
// happens, rather than look for other processes on a clock.
const helloSubject = "_WINK.store.hello"

// A host is the way of one process to the NATS server that keeps a state
// directory's store: the server itself while the process holds the
// directory's lock, or a connection over loopback to the process that
// does. It is the connections' provider (nats.InProcessServer), called at
// every connect and reconnect, which is where a process takes the server
// over when the holder has gone, and where a dormant holder takes it
// again (dormant.go).
//
// The directory holds three files of the host's: "lock", locked by the
// holder, which writes there its process id, the address it listens on
// and a nonce of its hold, one a line (a dormant holder leaves the
// address out); "credential" (0600), the token every connection
// presents; and the server's own "jetstream" directory.
type host struct {
	dir    string
	opts   Options
	token  string
	lock   *os.File // the lock file, open for as long as the host
	logger *slog.Logger

	mu     sync.Mutex // held while connecting, and so while taking over
	closed bool
	failed string                        // the last error of taking the server over, if it failed
	srv    atomic.Pointer[server.Server] // the server, while this process holds dir
	nc     *nats.Conn                    // the connection of this process, once open

	// Dormancy (dormant.go): the host stops the server after idle
	// without a call (0: never), and is dormant until the next. calls
	// counts the calls in flight (and the opening), last is when the
	// last ended (Unix ns); timer looks whether the host may go dormant.
	// up is closed while the connection is up, and replaced by an open
	// channel when the host goes dormant. nonce is written in the lock
	// file by this process each time it takes the dir, and released
	// says that it released the dir since it last held it.
	idle     time.Duration
	calls    atomic.Int64
	last     atomic.Int64
	dormant  atomic.Bool
	timer    *time.Timer
	up       atomic.Pointer[chan struct{}]
	nonce    string
	released bool
	arrival  *fsnotify.Watcher // of the lock file, while dormant

	// seen is set once another process has been seen on the directory:
	// this process reached the server over loopback, or its server had
	// another client. sharing is closed then.
	seen      atomic.Bool
	sharing   chan struct{}
	shareOnce sync.Once
}

// newHost creates dir (0700) if needed, and opens its lock file and its
// credential, which it creates if missing.
func newHost(dir string, opts Options) (*host, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: state dir %s cannot be created: %w", dir, err)
	}
	token, err := credential(filepath.Join(dir, "credential"))
	switch {
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("store: state dir %s is not writable: %w", dir, err)
	case err != nil:
		return nil, fmt.Errorf("store: state dir %s: its credential: %w", dir, err)
	}
	path := filepath.Join(dir, "lock")
	lock, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: state dir %s is not writable: %w", dir, err)
	}
	h := &host{
		dir: dir, opts: opts, token: token, lock: lock, logger: opts.Logger,
		sharing: make(chan struct{}), idle: opts.Dormancy,
	}
	h.calls.Store(1) // the opening, until OpenEmbedded returns
	h.up.Store(&closed)
	h.timer = time.AfterFunc(time.Hour, h.sleep)
	h.timer.Stop()
	return h, nil
}

// credential returns the token in the file path, which it first creates
// (0600) with a random token if there is none. The file appears whole or
// not at all, so that processes starting together agree on one token.
func credential(path string) (string, error) {
	for {
		b, err := os.ReadFile(path)
		switch token := string(bytes.TrimSpace(b)); {
		case err == nil && token != "":
			return token, nil
		case err == nil:
			return "", fmt.Errorf("%s is empty: remove it, with every process on the state dir stopped, for a new one", path)
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".credential-*")
		if err != nil {
			return "", err
		}
		_, werr := tmp.WriteString(rand.Text() + "\n")
		cerr := tmp.Close()
		if werr == nil && cerr == nil {
			// A link fails if the file exists: then the token already
			// there is read on the next turn.
			if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
				werr = err
			}
		}
		os.Remove(tmp.Name())
		if err := errors.Join(werr, cerr); err != nil {
			return "", err
		}
	}
}

// connect connects to the directory's server, trying again until ctx ends
// while a holder is starting its server, and returns a connection that
// reconnects, and takes the server over, for as long as it is open.
func (h *host) connect(ctx context.Context) (*nats.Conn, error) {
	for {
		nc, err := nats.Connect("", append(connOptions(h.logger),
			nats.InProcessServer(h), nats.Token(h.token), nats.CustomReconnectDelay(h.reconnectDelay),
			nats.ReconnectHandler(h.greet))...)
		if err == nil {
			return nc, nil
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return nil, fatal.err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store: state dir %s: %w: %w", h.dir, ErrUnavailable, err)
		case <-time.After(reconnectWait):
		}
	}
}

// reconnectDelay is the pause before an attempt to reconnect, after every
// attempt has failed: reconnectWait, or dormantWait while the host is
// dormant, when a call wakes the connection (wake).
func (h *host) reconnectDelay(int) time.Duration {
	if h.dormant.Load() {
		return dormantWait
	}
	return reconnectWait
}

// lockFile is tryLock, which a test replaces to see a filesystem without
// file locks.
var lockFile = tryLock

// errLocksUnsupported is wrapped by the error of tryLock on a filesystem
// without file locks (some network filesystems).
var errLocksUnsupported = errors.New("file locks are not supported")

// fatalError is an error of InProcessConn that trying again cannot mend:
// the state dir's lock or server failed.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }

// InProcessConn returns a connection to the directory's server: to the
// server of this process, if it holds the directory or takes it now, and
// otherwise over loopback to the address the holder wrote in the lock
// file.
func (h *host) InProcessConn() (net.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, net.ErrClosed
	}
	if h.dormant.Load() {
		return nil, errDormant
	}
	if srv := h.srv.Load(); srv != nil && !srv.Running() {
		// The server of this process stopped by itself: start it again,
		// under the lock this process still holds.
		srv.WaitForShutdown()
		h.srv.Store(nil)
	}
	if h.srv.Load() == nil {
		if err := h.hold(); err != nil {
			// Logged once for as long as it stays the same: a
			// connection that dropped tries again every reconnectWait.
			if msg := err.Error(); msg != h.failed {
				h.failed = msg
				h.logger.Error("taking over the session store failed", "dir", h.dir, "err", err)
			}
			return nil, fatalError{err}
		}
		h.failed = ""
	}
	if srv := h.srv.Load(); srv != nil {
		return srv.InProcessConn()
	}
	addr, err := h.holder()
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, fmt.Errorf("store: the server of %s at %s: %w", h.dir, addr, err)
	}
	h.share()
	return conn, nil
}

// errDormant is the error of a connection's attempt to reconnect while
// the host is dormant.
var errDormant = errors.New("store: the state dir's server is dormant")

// hold takes the directory's lock if no other process holds it (or keeps
// it, if this process holds it), then starts the server on the
// directory's files and writes its address in the lock file, with a nonce
// of this hold. It returns nil, and holds nothing, when another process
// holds the lock. When this process takes the dir again after it released
// it (dormant.go) and another process has held it meanwhile (the lock
// file holds another nonce than this process left), it records that it
// shares the dir.
func (h *host) hold() error {
	ok, err := lockFile(h.lock)
	switch {
	case errors.Is(err, errLocksUnsupported):
		return fmt.Errorf("store: state dir %s: file locks do not work there (%w); choose a state dir on a local filesystem", h.dir, err)
	case err != nil:
		return fmt.Errorf("store: lock %s: %w", h.lock.Name(), err)
	case !ok:
		return nil
	}
	if h.released {
		// Until this hold has written its own nonce, the next one
		// looks again.
		if b, err := os.ReadFile(h.lock.Name()); err != nil || lockNonce(b) != h.nonce {
			h.share()
		}
	}
	srv, err := h.start()
	if err != nil {
		unlock(h.lock)
		return err
	}
	addr := srv.Addr().String()
	h.nonce = rand.Text()
	if err = h.lock.Truncate(0); err == nil {
		_, err = h.lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+addr+"\n"+h.nonce+"\n"), 0)
	}
	if err != nil {
		stopServer(srv)
		unlock(h.lock)
		return fmt.Errorf("store: state dir %s is not writable: %w", h.dir, err)
	}
	h.srv.Store(srv)
	h.released = false
	h.arm(h.idle)
	h.logger.Debug("holding the session store", "root", h.root(), "addr", addr)
	return nil
}

// lockNonce returns the nonce in the lock file's content b: its third
// line, empty if it has none (written by an older version).
func lockNonce(b []byte) string {
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) < 4 {
		return ""
	}
	return string(lines[2])
}

// root is the directory the state dir is in, named in the logs: a stdio
// process's state dir is named after its session.
func (h *host) root() string { return filepath.Dir(h.dir) }

// start starts the server on the directory's files, listening on a free
// port of the loopback interface for connections that present the token.
func (h *host) start() (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName:    "wink-mcp",
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Authorization: h.token,
		JetStream:     true,
		StoreDir:      h.dir,
		SyncAlways:    h.opts.SyncAlways,
		NoSigs:        true,
	})
	if err != nil {
		return nil, fmt.Errorf("store: embedded server in %s: %w", h.dir, err)
	}
	srv.SetLoggerV2(serverLog{h.logger}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(h.opts.Timeout) {
		stopServer(srv)
		return nil, fmt.Errorf("store: embedded server in %s: not ready after %v: %w", h.dir, h.opts.Timeout, ErrUnavailable)
	}
	return srv, nil
}

// holder returns the address the holder wrote in the lock file.
func (h *host) holder() (string, error) {
	b, err := os.ReadFile(h.lock.Name())
	if err != nil {
		return "", err
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) < 3 || len(lines[1]) == 0 {
		return "", fmt.Errorf("store: the holder of %s has not started its server yet", h.dir)
	}
	return string(lines[1]), nil
}

// listen has nc, the connection of this process, hear the hello of every
// process that reaches the directory's server over loopback (share), and
// greets the holder itself if it is one of those.
func (h *host) listen(nc *nats.Conn) error {
	if _, err := nc.Subscribe(helloSubject, func(*nats.Msg) { h.share() }); err != nil {
		return err
	}
	h.greet(nc)
	return nil
}

// greet is called once nc has connected, and at every reconnect. A
// process that reaches the server over loopback says hello; the holder
// counts the server's clients instead, once the server has its
// subscription, for the processes that connected before it had.
func (h *host) greet(nc *nats.Conn) {
	defer h.connected()
	if h.srv.Load() == nil {
		if err := nc.Publish(helloSubject, nil); err != nil {
			h.logger.Debug("saying hello to the holder of the session store", "err", err)
		}
		h.arm(h.idle) // a sibling goes dormant too (sleep)
		return
	}
	if err := nc.Flush(); err == nil {
		h.seenOther()
	}
}

// shared reports whether another process has been seen on the directory:
// this process reaches the server over loopback (InProcessConn), or its
// server has another client than this process's connection, or had one,
// or another process held the directory while this one was dormant. A
// dormant host is woken first, and one waking waited for, as it cannot
// tell until it has taken the directory again or reached the process
// that took it.
func (h *host) shared() bool {
	if h.dormant.Load() || !isClosed(*h.up.Load()) {
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.Timeout)
		h.enter(ctx)
		h.leave(false)
		cancel()
	}
	return h.seenOther()
}

// seenOther is shared without waking a dormant host.
func (h *host) seenOther() bool {
	if h.seen.Load() {
		return true
	}
	if srv := h.srv.Load(); srv != nil && srv.NumClients() > 1 {
		h.share()
		return true
	}
	return false
}

// share records that another process has been seen on the directory.
func (h *host) share() {
	h.shareOnce.Do(func() {
		h.seen.Store(true)
		close(h.sharing)
	})
}

// close stops the server, if this process holds it, and releases the
// directory. The connection is closed first.
func (h *host) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	h.timer.Stop()
	if h.arrival != nil {
		h.arrival.Close()
		h.arrival = nil
	}
	if srv := h.srv.Load(); srv != nil {
		stopServer(srv)
	}
	h.lock.Close()
	if up := *h.up.Load(); !isClosed(up) {
		close(up)
	}
}

// stopServer shuts srv down and waits until it has.
func stopServer(srv *server.Server) {
	srv.Shutdown()
	srv.WaitForShutdown()
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
