package store

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Dormancy of a state dir's holder.
//
// The NATS server that keeps a state dir wakes its process many times a
// second for as long as it runs (its clock of access times ticks every
// 100 ms while a stream is open, and other clocks of its own every second
// or ten), and no option turns that off. So the holder of the dir stops
// the server once nothing has used it for Options.Dormancy, and starts it
// again when the next call comes: the host is then dormant. A holder goes
// dormant only when no call of its store is in flight, none has ended for
// the while, and no other process is connected to the server (a process
// that reaches it over loopback keeps it awake). So a sibling, a process
// that reaches the holder over loopback, goes dormant too on the same
// terms: it closes its connection, which waits to reconnect as a dormant
// holder's does, and so lets the holder go dormant in turn. The
// sibling's next call wakes it by the same path: it takes the dir if
// nobody holds it, or reaches the holder. Its watch of the store (the
// ordered consumer of Watch) waits with its connection, without a clock,
// and picks up where it was once the connection is back; the sessions
// layer checks a session held in memory against the store before each
// call of a store that is shared, which a sibling's is, so no call sees
// what another process replaced meanwhile.
//
// Going dormant stops the server and releases the dir's lock, whose file
// keeps no address then. The process's connection, dropped with the
// server, waits to reconnect without a clock (reconnectDelay) until a
// call wakes it (enter): then it reconnects by the path of every
// reconnect, InProcessConn, which takes the dir's lock again and starts
// the server, or reaches over loopback the process that took the dir
// meanwhile. So a process that arrives while the holder is dormant simply
// takes the dir, as it would had the holder gone, and there is no state
// beyond "holding", "reaching the holder" and "dormant".
//
// A process that takes the dir while its holder is dormant writes its
// address in the lock file, which the dormant holder watches (an inotify
// watch, or the platform's, which wakes nothing until the file changes):
// it wakes then, and reaches the newcomer as any other process would, so
// that its watch of the store tells its clients of the newcomer's
// commits as before. Where the file cannot be watched it wakes at its
// next call.
//
// Another process may have held the dir, and written to the store, while
// this one was dormant. The holder writes a nonce of its own in the lock
// file each time it takes the dir; when it takes the dir again after it
// went dormant and finds another nonce there, another process has held the
// dir meanwhile, and it records that it shares the dir (share), as it
// would on seeing the other process connect: from then on the sessions
// held in memory are checked against the store before each call and the
// store is watched. Shared wakes a dormant host before it answers, since
// until it has taken the dir again it cannot tell.

// dormantWait is the pause between two attempts of a dormant host's
// connection to reconnect: long enough never to wake the process, since a
// call wakes the connection itself (wake); the attempt it makes after the
// pause finds the host still dormant and waits again.
const dormantWait = 24 * time.Hour

// backgroundGrace is how long a host woken by calls in the background
// (Background) stays awake after the last of them, for the next of the
// same batch.
const backgroundGrace = time.Second

// Background returns ctx marked as the context of work in the background,
// such as the periodic expiry of idle sessions: a call made with it wakes
// a dormant state dir's holder as any call does, but does not keep it
// awake, so that the holder goes dormant again a second after such calls,
// rather than after Options.Dormancy, unless another call came meanwhile.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// backgroundKey is the key of the mark of Background.
type backgroundKey struct{}

// begin starts a call of the store: it wakes a dormant state dir's server
// (enter), and returns ctx bounded by the store's timeout when it has no
// deadline, and a cancel that ends the call.
func (s *JetStream) begin(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := deadline(ctx, s.timeout)
	if s.host == nil {
		return ctx, cancel
	}
	s.host.enter(ctx)
	background := ctx.Value(backgroundKey{}) != nil
	return ctx, func() {
		cancel()
		s.host.leave(background)
	}
}

// enter counts a call in flight, which keeps the host from going dormant,
// wakes the host if it is dormant, and waits until its connection is up
// again after dormancy, or ctx ends. Awake, it costs an atomic add, two
// atomic loads and the receive from a closed channel.
func (h *host) enter(ctx context.Context) {
	h.calls.Add(1)
	if h.dormant.Load() {
		h.wake()
	}
	select {
	case <-*h.up.Load():
	case <-ctx.Done():
	}
}

// leave ends a call that entered, and notes when it ended; a call in the
// background instead has the host look whether it may go dormant soon, if
// no other call has ended within idle.
func (h *host) leave(background bool) {
	switch {
	case !background:
		h.last.Store(time.Now().UnixNano())
	case time.Since(time.Unix(0, h.last.Load())) >= h.idle:
		h.arm(backgroundGrace)
	}
	h.calls.Add(-1)
}

// wake ends the host's dormancy: its connection, which waits without a
// clock, is told to reconnect now (which takes the dir again, or reaches
// the process that took it). up is closed once it has.
func (h *host) wake() {
	h.mu.Lock()
	if !h.dormant.Load() || h.closed {
		h.mu.Unlock()
		return
	}
	h.dormant.Store(false)
	nc := h.nc
	if h.arrival != nil {
		h.arrival.Close()
		h.arrival = nil
	}
	h.mu.Unlock()
	h.logger.Debug("waking the session store", "root", h.root())
	// Not under h.mu: a reconnect holds the connection's lock while it
	// takes h.mu (InProcessConn).
	if err := nc.ForceReconnect(); err != nil {
		h.connected() // closed: the calls fail at once
	}
}

// connected is called once the host's connection is up, after it
// connected or reconnected: it releases the calls that wait for it.
func (h *host) connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if up := *h.up.Load(); !isClosed(up) {
		close(up)
	}
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// arm has the host look, once idle has passed, whether it may go dormant
// (sleep). It does nothing when dormancy is off.
func (h *host) arm(after time.Duration) {
	if h.idle > 0 {
		h.timer.Reset(after)
	}
}

// sleep makes the host dormant if it may: no call is in flight or has
// ended within idle, and, when it holds the server, no other process is
// connected to it. Otherwise it looks again when that may have changed:
// idle after the last call ended, or after idle while another process is
// connected. A call that enters while the host goes dormant waits for
// h.mu in wake, and wakes it again.
//
// A holder stops its server and releases the dir. A sibling (a process
// that reaches the holder over loopback) closes its connection, which
// then waits to reconnect without a clock, as a dormant holder's does:
// the holder, seeing no other process, goes dormant in turn, and the
// sibling's watch of the store waits with the connection.
func (h *host) sleep() {
	h.mu.Lock()
	srv := h.srv.Load()
	if h.closed || h.dormant.Load() {
		h.mu.Unlock()
		return // armed again when the host is woken (greet, hold)
	}
	if h.nc == nil { // still opening
		h.timer.Reset(h.idle)
		h.mu.Unlock()
		return
	}
	if wait := h.idle - time.Since(time.Unix(0, h.last.Load())); wait > 0 {
		h.timer.Reset(wait)
		h.mu.Unlock()
		return
	}
	if srv != nil && srv.NumClients() > 1 || srv == nil && !h.nc.IsConnected() {
		// Another process is connected; or this sibling's connection
		// is down (the holder went), and its reconnect, which takes
		// the dir or reaches the next holder, arms the timer again.
		if srv != nil {
			h.timer.Reset(h.idle)
		}
		h.mu.Unlock()
		return
	}
	// A call that entered before this store sees it in calls; one that
	// enters after sees dormant, and wakes the host once this returns.
	h.dormant.Store(true)
	if h.calls.Load() > 0 {
		h.dormant.Store(false)
		h.timer.Reset(h.idle)
		h.mu.Unlock()
		return
	}
	up := make(chan struct{})
	h.up.Store(&up)
	if srv != nil {
		stopServer(srv)
		h.srv.Store(nil)
		// The lock file keeps this holder's nonce, and no address: a
		// process that reads it before the next holder has written its
		// own waits.
		if err := h.lock.Truncate(0); err == nil {
			h.lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n\n"+h.nonce+"\n"), 0)
		}
		unlock(h.lock)
		h.released = true
	}
	h.watchArrival()
	nc := h.nc
	h.mu.Unlock()
	if srv == nil {
		// Not under h.mu, as in wake. Its attempt to reconnect finds the
		// host dormant (InProcessConn), and waits for a call. A call
		// that woke the host meanwhile has had it reconnect already:
		// this drops that connection once more, and it reconnects at
		// once, its calls trying again meanwhile.
		if err := nc.ForceReconnect(); err != nil {
			return // closed
		}
	}
	h.logger.Debug("the session store is dormant", "root", h.root(), "idle", h.idle, "holder", srv != nil)
}

// watchArrival wakes the dormant host when another process writes its
// address in the lock file, which it does once it has taken the dir. The
// caller holds h.mu; wake and close end the watch.
func (h *host) watchArrival() {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(h.lock.Name())
	}
	if err != nil {
		h.logger.Debug("the lock file of the session store cannot be watched: a process that takes it is reached at the next call", "err", err)
		if w != nil {
			w.Close()
		}
		return
	}
	h.arrival = w
	go func() {
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Op&(fsnotify.Write|fsnotify.Create) == 0 {
					continue
				}
				if _, err := h.holder(); err != nil {
					// No address: the holder went dormant (what a
					// dormant sibling sees), or the next one has not
					// written it yet, which it does next.
					continue
				}
				h.logger.Debug("another process took the session store", "root", h.root())
				ctx, cancel := context.WithTimeout(context.Background(), h.opts.Timeout)
				h.enter(ctx)
				h.leave(true)
				cancel()
				return
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
}

// Awake keeps the state dir's server from going dormant until release is
// called, and wakes it now if it is dormant, without waiting for it: for
// what waits on the store's watch rather than calling the store, such as
// a client subscribed to a resource, which hears of other processes'
// commits only while the process is awake. Release may be called more
// than once.
func (s *JetStream) Awake() (release func()) {
	h := s.host
	if h == nil {
		return func() {}
	}
	h.calls.Add(1)
	if h.dormant.Load() {
		h.wake()
	}
	var once sync.Once
	return func() { once.Do(func() { h.leave(false) }) }
}
