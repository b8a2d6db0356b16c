package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/wink-mcp/wink-mcp/blobname"
	"golang.org/x/sync/errgroup"
)

// JetStream is a Store on NATS JetStream, reached in process (OpenEmbedded)
// or over the network (Connect).
//
// It keeps three streams. The state stream holds heads under
// NAME.head.SESSION and blobs under NAME.blob.SESSION.HASH, one message per
// subject (each published as a rollup of its subject), and located blobs
// under NAME.data.SESSION, many messages on the subject, each with the hash
// of its content in a header (Wink-Hash) and found by its sequence; so a
// message's stream sequence is the revision of a head or blob, and heads
// and blobs share one sequence. A server that starts indexes the stream's
// subjects one by one, and a session's files' contents are one subject
// rather than one each. The log stream holds each
// session's call log under NAME.log.SESSION, as many messages per subject
// as Options.LogRetention. The task stream holds each task's record under
// NAME.task.OWNER.ID, one message per subject, which the server removes
// when its time to live (the keep of PutTask) has passed.
//
// A head is replaced by publishing with an expected last sequence for its
// subject (the same compare-and-swap a KV bucket's Update makes); a plain KV
// bucket is not used because its reads may be served by a replica that
// lags, which could show a head whose blobs it has not yet received, and
// because a head must carry the id of the commit that wrote it. A deleted
// session's head is a marker message (header Wink-Op: delete) until its
// blobs and log are purged, then another (Wink-Op: deleted), so that
// watchers see the deletion, which Expire removes once it is a minute old.
//
// The state stream allows no per-message TTL: while a stream that allows
// them holds no message with one, the server arms a timer for every
// message stored, which cost an eighth of the CPU of a call that commits.
// A stream created by an earlier version keeps allowing them, as the
// server cannot turn that off. The task stream's records expire by their
// TTLs, which need nats-server 2.11 or later.
type JetStream struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	state     jetstream.Stream
	log       jetstream.Stream
	tasks     jetstream.Stream
	rollup    bool // whether the state stream takes rollups (format 6)
	name      string
	timeout   time.Duration
	retention int
	logger    *slog.Logger

	host *host // the state dir's server (OpenEmbedded), or nil

	done      chan struct{}
	closeOnce sync.Once
}

var _ Store = (*JetStream)(nil)

const (
	// opHeader marks a head message that is a deletion marker: opDelete
	// while the session's blobs and log are being purged, then opDeleted,
	// which Expire removes once it is deletedTTL old.
	opHeader   = "Wink-Op"
	opDelete   = "delete"
	opDeleted  = "deleted"
	deletedTTL = time.Minute

	// dedupWindow is how long a cluster remembers the id of a write, within
	// which a write sent again after a lost answer is recognised rather
	// than applied twice. It outlasts a failover and a commit's deadline;
	// past it the head's commit id still settles the outcome, unless
	// another commit has replaced that head meanwhile. A single server
	// checks a head's expected revision before its id, so there the window
	// spares nothing and is kept at the server's minimum, which spares the
	// memory of remembering every id.
	dedupWindow    = 30 * time.Second
	minDedupWindow = 100 * time.Millisecond

	// hashHeader carries the hash of a located blob's content.
	hashHeader = "Wink-Hash"
)

// open creates or updates the store's streams on nc, retrying while a fresh
// cluster elects its leaders, and returns the store. On error nc is left
// to the caller.
//
// Streams in an older format than Format are migrated first (migrate) by
// the one process that may: the holder of the state directory's lock
// (OpenEmbedded), or of the migration's lease in the store (Connect; see
// lease), as mayMigrate says. Another process waits for it to finish, and
// takes the migration over if it goes, or gives up with ErrMigrating when
// ctx ends.
func open(ctx context.Context, nc *nats.Conn, opts Options, mayMigrate func(ctx context.Context, s *JetStream) (release func(), ok bool, err error)) (*JetStream, error) {
	if !validName(opts.Name) {
		return nil, fmt.Errorf("store: name %q: %w", opts.Name, ErrInvalid)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(opts.Timeout))
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &JetStream{nc: nc, js: js, name: opts.Name, timeout: opts.Timeout, retention: opts.LogRetention, logger: opts.Logger, done: make(chan struct{})}
	cfgs := s.streams(opts)
	waited := 0 // the format of the store whose migration this process waits for
	for {
		found, streams, err := s.formats(ctx, cfgs)
		if err != nil && waited > 0 && ctx.Err() != nil {
			err = fmt.Errorf("store: stream %s holds format %d, and this version of wink-mcp writes format %d: %w: %w", cfgs[0].Name, waited, Format, ErrMigrating, ErrUnavailable)
		}
		if err != nil {
			return nil, err
		}
		if slices.Min(found) == Format {
			break
		}
		s.state, s.log, s.tasks = streams[0], streams[1], streams[2]
		release, ok, err := mayMigrate(ctx, s)
		if err != nil {
			return nil, err
		}
		if ok {
			// Not bounded by the opening's deadline: a store is migrated
			// whole, however long it takes, each request with its own.
			err := s.migrate(context.WithoutCancel(ctx), opts, cfgs, found, streams)
			release()
			if err != nil {
				return nil, err
			}
			continue
		}
		waited = found[0]
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store: stream %s holds format %d, and this version of wink-mcp writes format %d: %w: %w", cfgs[0].Name, waited, Format, ErrMigrating, ErrUnavailable)
		case <-time.After(migrationPoll):
		}
	}
	streams := []*jetstream.Stream{&s.state, &s.log, &s.tasks}
	for i, cfg := range cfgs {
		if *streams[i], err = createStream(ctx, js, cfg); err != nil {
			return nil, err
		}
	}
	s.rollup = s.state.CachedInfo().Config.AllowRollup
	return s, nil
}

// migrationPoll is how often a process that waits for another to migrate
// the store looks again.
const migrationPoll = 100 * time.Millisecond

// createStream creates or updates a stream. A cluster that has just formed
// refuses until it has elected a leader, so failed attempts are repeated
// until ctx ends.
//
// A stream that holds another format than this version's is refused with
// ErrIncompatible, and left as it is.
func createStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (st jetstream.Stream, err error) {
	cfg.Metadata = map[string]string{formatKey: strconv.Itoa(Format)}
	found := 0
	err = retry(ctx, func(ctx context.Context) (bool, error) {
		found = 0
		old, err := js.Stream(ctx, cfg.Name)
		switch {
		case err == nil:
			if found, err = streamFormat(&old.CachedInfo().Config); err != nil {
				return true, err
			}
			if found != Format {
				return true, nil
			}
			// The server cannot stop a stream allowing per-message TTLs.
			cfg.AllowMsgTTL = cfg.AllowMsgTTL || old.CachedInfo().Config.AllowMsgTTL
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			return js.Conn().IsClosed(), err
		}
		st, err = js.CreateOrUpdateStream(ctx, cfg)
		return err == nil || js.Conn().IsClosed(), err
	})
	switch {
	case errors.Is(err, ErrIncompatible):
		return nil, err
	case found > Format:
		return nil, errNewer(cfg.Name, found)
	case found != 0 && found != Format:
		return nil, errNoStep(cfg.Name, found)
	case err != nil:
		return nil, fmt.Errorf("store: create stream %s: %w: %w", cfg.Name, ErrUnavailable, err)
	}
	return st, nil
}

// validName reports whether a store name can prefix streams and subjects.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return name != ""
}

func (s *JetStream) headSubject(session string) string { return s.name + ".head." + session }
func (s *JetStream) blobSubject(session, hash string) string {
	return s.name + ".blob." + session + "." + hash
}
func (s *JetStream) dataSubject(session string) string { return s.name + ".data." + session }
func (s *JetStream) logSubject(session string) string  { return s.name + ".log." + session }
func (s *JetStream) taskSubject(owner, id string) string {
	return s.name + ".task." + owner + "." + id
}

// Attempts of a call that gets no answer are repeated with a pause, each
// with a deadline of its own, until the call's context ends.
const (
	attemptTimeout = time.Second
	attemptPause   = 50 * time.Millisecond
)

// A consumer's first pull request, sent as the consumer starts on another
// server, can be lost; short pulls with heartbeats notice that soon (after
// two missed heartbeats) and have an ordered consumer start over. A scan
// waits scanIdle for a message before it asks the consumer whether any is
// still pending: longer than it takes to notice a lost pull.
const (
	pullExpiry    = jetstream.PullExpiry(5 * time.Second)
	pullHeartbeat = jetstream.PullHeartbeat(500 * time.Millisecond)
	scanIdle      = 2 * time.Second
)

// A watch, which waits for changes for as long as the process lives,
// mostly idle, pulls for longer, with rarer heartbeats: each heartbeat
// wakes the server and the watching process. The watch (an ordered
// consumer) starts over at once when its connection is back (after a
// takeover) or the server has no consumer for its pull; a pull lost
// without a word is noticed after two missed heartbeats (40 s). Calls do
// not wait for the watch, which only tells clients of changes sooner.
const (
	watchExpiry    = jetstream.PullExpiry(time.Minute)
	watchHeartbeat = jetstream.PullHeartbeat(20 * time.Second)
)

// retry calls try until it reports that it is done, or ctx ends, and
// returns try's last error.
func retry(ctx context.Context, try func(ctx context.Context) (done bool, err error)) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		done, err := try(actx)
		cancel()
		if done {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(attemptPause):
		}
	}
}

// settled reports whether err ends a call: no error, an answer of the
// server, an answer of this package, or a closed connection. Anything else
// means the request or its answer was lost, and the call may be tried
// again.
func (s *JetStream) settled(err error) bool {
	var api *jetstream.APIError
	return err == nil || errors.As(err, &api) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, errMoved) || s.nc.IsClosed()
}

// do calls fn as retry does, until it returns an error that settles the
// call.
func (s *JetStream) do(ctx context.Context, fn func(ctx context.Context) error) error {
	return retry(ctx, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		return s.settled(err), err
	})
}

// fail describes an error of operation op on session. An answer of the
// server is a refusal; anything else means the store was not reached, or
// did not answer in time.
func fail(op, session string, err error) error {
	var api *jetstream.APIError
	if errors.Is(err, ErrNotFound) || errors.As(err, &api) {
		return fmt.Errorf("store: %s %s: %w", op, session, err)
	}
	return fmt.Errorf("store: %s %s: %w: %w", op, session, ErrUnavailable, err)
}

// one returns m, which is a head or a content-addressed blob, made a
// rollup of its subject, so that the subject keeps it alone. A state
// stream of a format before 6, which a migration works on, takes no
// rollups and keeps one message per subject by its limit.
func (s *JetStream) one(m *nats.Msg) *nats.Msg {
	if s.rollup {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	}
	return m
}

// isDeleted reports whether a head message is a deletion marker.
func isDeleted(h nats.Header) bool { return h.Get(opHeader) != "" }

// last returns the last message on a subject of st, or an error wrapping
// ErrNotFound.
func last(ctx context.Context, st jetstream.Stream, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrNotFound
	}
	return m, err
}

// read returns the last message on a subject of the state stream, trying
// again while the store does not answer.
func (s *JetStream) read(ctx context.Context, subject string) (m *jetstream.RawStreamMsg, err error) {
	err = s.do(ctx, func(ctx context.Context) error {
		m, err = last(ctx, s.state, subject)
		return err
	})
	return m, err
}

// Create implements Store. A deletion left unfinished under the same name
// is finished first.
func (s *JetStream) Create(ctx context.Context, session string, head []byte) (uint64, error) {
	if err := checkCommit(session, head, nil); err != nil {
		return 0, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	for {
		var after uint64 // the revision of a deletion marker the head replaces
		cur, err := s.read(ctx, s.headSubject(session))
		switch {
		case err == nil && !isDeleted(cur.Header):
			return 0, fmt.Errorf("store: create %s: %w", session, ErrExists)
		case err == nil && cur.Header.Get(opHeader) == opDelete:
			if err := s.finishDelete(ctx, session, cur.Sequence); err != nil {
				return 0, fail("create", session, err)
			}
			continue
		case err == nil:
			after = cur.Sequence
		case !errors.Is(err, ErrNotFound):
			return 0, fail("create", session, err)
		}
		rev, err := s.putHead(ctx, session, after, head, nil)
		switch {
		case errors.Is(err, errMoved), errors.Is(err, ErrNotFound):
			continue // changed meanwhile: look again
		case err != nil:
			return 0, fail("create", session, err)
		}
		return rev, nil
	}
}

// Load implements Store.
func (s *JetStream) Load(ctx context.Context, session string) (Head, error) {
	if err := checkSession(session); err != nil {
		return Head{}, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	m, err := s.read(ctx, s.headSubject(session))
	if err == nil && isDeleted(m.Header) {
		err = ErrNotFound
	}
	if err != nil {
		return Head{}, fail("load", session, err)
	}
	return Head{Data: m.Data, Rev: m.Sequence, Time: m.Time}, nil
}

// Commit implements Store. The blobs are published together, and all are
// stored before the head is published. If the session turns out to be
// deleted, the blobs are purged again: anything of a session stored before
// them belongs to it as it was before the deletion, as a session created
// again under the name stores its blobs after that.
func (s *JetStream) Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error) {
	if err := checkCommit(session, head, blobs); err != nil {
		return 0, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	var written uint64
	if len(blobs) > 0 {
		err := s.do(ctx, func(ctx context.Context) (err error) {
			written, err = s.putBlobs(ctx, session, blobs)
			return err
		})
		if err != nil {
			return 0, fail("commit", session, err)
		}
	}
	newRev, err := s.putHead(ctx, session, rev, head, nil)
	switch {
	case errors.Is(err, errMoved):
		return 0, fmt.Errorf("store: commit %s at %d: %w", session, rev, ErrConflict)
	case errors.Is(err, ErrNotFound) && written > 0:
		// The session's located blobs (PutData) were stored before
		// the commit's blobs, and go below the same revision.
		if perr := s.purgeBlobs(ctx, session, written+1); perr != nil {
			err = fmt.Errorf("%w (and its blobs were left: %w)", err, perr)
		}
		return 0, fail("commit", session, err)
	case err != nil:
		return 0, fail("commit", session, err)
	}
	return newRev, nil
}

// putBlobs publishes blobs, at most blobWindow unacknowledged at a time,
// waits until every one is stored, and returns the highest revision they
// got.
func (s *JetStream) putBlobs(ctx context.Context, session string, blobs map[string][]byte) (uint64, error) {
	var highest uint64
	p := &pipeline{js: s.js, maxMsgs: blobWindow, stored: func(_ *nats.Msg, rev uint64) { highest = max(highest, rev) }}
	for h, b := range blobs {
		if err := p.publish(ctx, s.one(&nats.Msg{Subject: s.blobSubject(session, h), Data: b})); err != nil {
			return 0, err
		}
	}
	if err := p.wait(ctx); err != nil {
		return 0, err
	}
	return highest, nil
}

// pipeline publishes messages without waiting for each to be stored
// before the next, with at most maxMsgs of them (if not 0), or maxBytes of
// their data (if not 0), not yet acknowledged, and calls stored with each
// message and the revision it got, in the order they were published.
type pipeline struct {
	js       jetstream.JetStream
	maxMsgs  int
	maxBytes int
	stored   func(m *nats.Msg, rev uint64)

	pending []jetstream.PubAckFuture
	bytes   int
}

// publish publishes m once the window has room for it.
func (p *pipeline) publish(ctx context.Context, m *nats.Msg) error {
	for len(p.pending) > 0 && (p.maxMsgs > 0 && len(p.pending) >= p.maxMsgs || p.maxBytes > 0 && p.bytes+len(m.Data) > p.maxBytes) {
		if err := p.next(ctx); err != nil {
			return err
		}
	}
	a, err := p.js.PublishMsgAsync(m)
	if err != nil {
		return err
	}
	p.pending = append(p.pending, a)
	p.bytes += len(m.Data)
	return nil
}

// wait waits until every message published is stored.
func (p *pipeline) wait(ctx context.Context) error {
	for len(p.pending) > 0 {
		if err := p.next(ctx); err != nil {
			return err
		}
	}
	return nil
}

// next waits for the acknowledgment of the oldest message pending.
func (p *pipeline) next(ctx context.Context) error {
	a := p.pending[0]
	select {
	case ack := <-a.Ok():
		p.stored(a.Msg(), ack.Sequence)
	case err := <-a.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
	p.pending = p.pending[1:]
	p.bytes -= len(a.Msg().Data)
	return nil
}

// blobWindow bounds the blobs of one commit in flight at once.
const blobWindow = 256

// purge removes the messages of st on subject (which may end in a
// wildcard) whose revision is below before, or all of them if before is 0.
func (s *JetStream) purge(ctx context.Context, st jetstream.Stream, subject string, before uint64) error {
	return s.do(ctx, func(ctx context.Context) error {
		return st.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(before))
	})
}

// purgeBlobs removes the session's blobs, content-addressed and located,
// whose revision is below before.
func (s *JetStream) purgeBlobs(ctx context.Context, session string, before uint64) error {
	if err := s.purge(ctx, s.state, s.blobSubject(session, "*"), before); err != nil {
		return err
	}
	return s.purge(ctx, s.state, s.dataSubject(session), before)
}

// maxRefusals is how many times in a row the server may refuse a head
// that is still at its expected revision before the refusal is final.
const maxRefusals = 10

// errMoved reports that a head was not replaced because it is no longer at
// the expected revision.
var errMoved = errors.New("head moved")

// errUnsettled reports that a head moved past the expected revision after
// an attempt to replace it got no answer: whether that attempt was stored
// (and replaced since by another writer's head) nothing tells.
var errUnsettled = errors.New("the head moved after an attempt that got no answer, which may have been stored")

// putHead publishes head, with headers hdr, if the session's head is at
// revision rev (0: if there is none) and returns its revision. It returns
// errMoved if the head is elsewhere, errUnsettled if it moved after an
// attempt that got no answer, ErrNotFound if the session was deleted. Whatever went wrong with the request, what happened is read from
// the head, which carries the id of the commit that wrote it; while the
// head is still at rev the request is sent again under the same id, which
// the server recognises if the first one was applied after all.
func (s *JetStream) putHead(ctx context.Context, session string, rev uint64, head []byte, hdr nats.Header, opts ...jetstream.PublishOpt) (uint64, error) {
	subject := s.headSubject(session)
	opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgID(nuid.Next()))
	var out uint64
	refusals := 0
	// lost is set once an attempt got no answer: it may have been stored,
	// and replaced since by another writer's head.
	lost := false
	err := retry(ctx, func(ctx context.Context) (bool, error) {
		msg := s.one(&nats.Msg{Subject: subject, Header: nats.Header{}, Data: head})
		for k, v := range hdr {
			msg.Header[k] = v
		}
		ack, err := s.js.PublishMsg(ctx, msg, opts...)
		if err == nil {
			out = ack.Sequence
			return true, nil
		}
		var api *jetstream.APIError
		lost = lost || !errors.As(err, &api)
		cur, gerr := last(ctx, s.state, subject)
		switch {
		case gerr == nil && cur.Header.Get(jetstream.MsgIDHeader) == msg.Header.Get(jetstream.MsgIDHeader):
			out = cur.Sequence
			return true, nil
		case gerr == nil && cur.Sequence == rev:
			// Not applied, or not yet (a replicated stream refuses while
			// an earlier write is in flight): send it again, unless the
			// server keeps refusing.
			if errors.As(err, &api) {
				if refusals++; refusals == maxRefusals {
					return true, err
				}
			}
		case gerr == nil && isDeleted(cur.Header):
			return true, ErrNotFound
		case gerr == nil && lost:
			// Another writer's head replaced rev, or the head of an
			// attempt that got no answer: which, nothing tells.
			return true, errUnsettled
		case gerr == nil:
			return true, errMoved
		case errors.Is(gerr, ErrNotFound) && rev != 0:
			return true, ErrNotFound
		}
		return s.nc.IsClosed(), err
	})
	return out, err
}

// PutData implements Store: the contents are published on the session's
// data subject as a commit's blobs are, at most blobWindow unacknowledged
// at a time, each with an id of its own, so that one sent again after a
// lost answer within the stream's window of duplicates is stored once and
// keeps its sequence; past the window it is stored again, and the first
// copy, which no head names, goes with the next sweep.
func (s *JetStream) PutData(ctx context.Context, session string, contents [][]byte) ([]string, error) {
	if err := checkData(session, contents); err != nil {
		return nil, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	ids := make([]string, len(contents))
	for i := range ids {
		ids[i] = nuid.Next()
	}
	subject := s.dataSubject(session)
	names := make([]string, 0, len(contents))
	err := s.do(ctx, func(ctx context.Context) error {
		names = names[:0]
		p := &pipeline{js: s.js, maxMsgs: blobWindow, stored: func(m *nats.Msg, rev uint64) {
			names = append(names, blobname.Located(m.Header.Get(hashHeader), rev))
		}}
		for i, c := range contents {
			m := &nats.Msg{Subject: subject, Data: c, Header: nats.Header{
				hashHeader:            []string{Hash(c)},
				jetstream.MsgIDHeader: []string{ids[i]},
			}}
			if err := p.publish(ctx, m); err != nil {
				return err
			}
		}
		return p.wait(ctx)
	})
	if err != nil {
		return nil, fail("put data", session, err)
	}
	return names, nil
}

// Blob implements Store. A located blob is read by its sequence, and is
// the session's only if the message there is on the session's data
// subject with the name's hash.
func (s *JetStream) Blob(ctx context.Context, session, name string) ([]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	hash, seq, _ := blobname.Split(name)
	var m *jetstream.RawStreamMsg
	var err error
	if seq == 0 {
		m, err = s.read(ctx, s.blobSubject(session, hash))
	} else {
		m, err = s.readAt(ctx, seq)
		if err == nil && (m.Subject != s.dataSubject(session) || m.Header.Get(hashHeader) != hash) {
			err = ErrNotFound
		}
	}
	if err != nil {
		return nil, fail("blob", session+"/"+name, err)
	}
	return m.Data, nil
}

// readAt returns the message of the state stream at sequence seq, or an
// error wrapping ErrNotFound, from the stream's leader (or the single
// server, by a direct get), trying again while the store does not answer.
func (s *JetStream) readAt(ctx context.Context, seq uint64) (m *jetstream.RawStreamMsg, err error) {
	err = s.do(ctx, func(ctx context.Context) error {
		m, err = s.state.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ErrNotFound
		}
		return err
	})
	return m, err
}

// Sweep implements Store without a request per blob it keeps: a scan of
// the headers of the session's blobs, content-addressed and located,
// finds those written before rev; each content-addressed blob among them
// that live keeps is published again, in place of its older copy (a
// subject keeps one message), and then one purge removes what is left of
// the session's content-addressed blobs below rev, which is what live
// does not keep; each located blob live does not keep is deleted by its
// sequence, and those it keeps stay where they are (a located blob's
// sequence is its name). Its cost is a scan of the session's blobs, a
// read and a publish per content-addressed blob it keeps, one purge, and
// a request per located blob it removes; at most sweepWindow bytes of
// blobs written again, and removeWindow deletions, are in flight at once.
//
// A blob kept is written again with a later revision, as a commit would,
// so that the contract holds whatever runs meanwhile: a commit writes
// every blob its head needs and the one it loaded did not; another sweep
// at a later revision removes a copy only if it is dead there. A session
// deleted while it ran has the blobs it wrote again removed.
func (s *JetStream) Sweep(ctx context.Context, session string, rev uint64, live func(name string) bool) (Swept, error) {
	if err := checkSession(session); err != nil {
		return Swept{}, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	prefix, data := s.blobSubject(session, ""), s.dataSubject(session)
	var keep []string     // the subjects of the blobs below rev that live keeps
	var deadData []uint64 // the sequences of the located blobs below rev it does not
	dead, keptData := 0, 0
	// Each filter is scanned on its own: the server finds the next
	// message of a consumer of several filters by a walk of every
	// subject of its block, which made the scan of a session of 10,000
	// files cost as much as 5,000 of its calls.
	for _, filter := range []string{prefix + "*", data} {
		reset := func() { keep, dead = keep[:0], 0 }
		if filter == data {
			reset = func() { deadData, keptData = deadData[:0], 0 }
		}
		// The scan may run on a replica that lags: it goes on until it
		// has seen the last message of its filter as the leader has it,
		// and every blob below rev was written before that one was read.
		end, err := s.read(ctx, filter)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err == nil {
			err = s.scan(ctx, s.state, jetstream.OrderedConsumerConfig{
				FilterSubjects: []string{filter},
				DeliverPolicy:  jetstream.DeliverAllPolicy,
				HeadersOnly:    true,
			}, end.Sequence, reset, func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
				seq := meta.Sequence.Stream
				switch {
				case seq >= rev:
				case m.Subject() == data && live(blobname.Located(m.Headers().Get(hashHeader), seq)):
					keptData++
				case m.Subject() == data:
					deadData = append(deadData, seq)
				case live(strings.TrimPrefix(m.Subject(), prefix)):
					keep = append(keep, m.Subject())
				default:
					dead++
				}
			})
		}
		if err != nil {
			return Swept{}, fail("sweep", session, err)
		}
	}
	var err error
	sw := Swept{Removed: dead + len(deadData), Kept: keptData}
	kept := map[string]uint64{} // subject → the revision it was written again at
	if dead > 0 {
		err = s.rewrite(ctx, keep, rev, kept, &sw)
	}
	if err == nil && dead > 0 {
		err = s.purge(ctx, s.state, prefix+"*", rev)
	}
	if err == nil && len(kept) > 0 {
		err = s.unlessDeleted(ctx, session, kept)
	}
	if err == nil {
		err = s.deleteAt(ctx, deadData)
	}
	if err != nil {
		return Swept{}, fail("sweep", session, err)
	}
	return sw, nil
}

// deleteAt deletes the messages of the state stream at seqs, removeWindow
// of them in flight at once.
func (s *JetStream) deleteAt(ctx context.Context, seqs []uint64) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(removeWindow)
	for _, seq := range seqs {
		g.Go(func() error { return s.deleteOne(gctx, seq) })
	}
	return g.Wait()
}

// deleteOne deletes the message of the state stream at seq, without
// erasing its bytes; one already gone is no error. The server's refusal
// comes as its text only.
func (s *JetStream) deleteOne(ctx context.Context, seq uint64) error {
	return retry(ctx, func(ctx context.Context) (bool, error) {
		err := s.state.DeleteMsg(ctx, seq)
		switch {
		case errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) && strings.Contains(err.Error(), server.ErrStoreMsgNotFound.Error()):
			return true, nil
		case errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful):
			return true, err
		}
		return s.settled(err), err
	})
}

// Remove implements Store by a purge of each content-addressed blob's
// subject below rev, and a deletion of each located blob below rev by its
// sequence: a request per blob, and no look at the others, removeWindow
// of them in flight at once (which the server answers for about four
// fifths of the CPU of one at a time). The session's deletion meanwhile
// changes nothing: its blobs go with it.
func (s *JetStream) Remove(ctx context.Context, session string, rev uint64, names []string) (int, error) {
	if err := checkRemove(session, names); err != nil {
		return 0, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(removeWindow)
	for _, n := range names {
		h, seq, _ := blobname.Split(n)
		switch {
		case seq == 0:
			g.Go(func() error { return s.purge(gctx, s.state, s.blobSubject(session, h), rev) })
		case seq < rev:
			g.Go(func() error { return s.deleteOne(gctx, seq) })
		}
	}
	if err := g.Wait(); err != nil {
		return 0, fail("remove", session, err)
	}
	return len(names), nil
}

// removeWindow bounds the purges of a Remove in flight at once.
const removeWindow = 8

// sweepWindow bounds the bytes of the blobs a sweep has written again and
// not yet seen stored.
const sweepWindow = 1 << 20

// rewrite publishes again the blob of each subject whose copy is below
// rev, records in written the revision each got, and counts them in sw.
func (s *JetStream) rewrite(ctx context.Context, subjects []string, rev uint64, written map[string]uint64, sw *Swept) error {
	p := &pipeline{js: s.js, maxBytes: sweepWindow, stored: func(m *nats.Msg, rev uint64) { written[m.Subject] = rev }}
	for _, subject := range subjects {
		m, err := s.read(ctx, subject)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // removed meanwhile
		case err != nil:
			return err
		case m.Sequence >= rev:
			continue // written again meanwhile
		}
		if err := p.publish(ctx, s.one(&nats.Msg{Subject: subject, Data: m.Data})); err != nil {
			return err
		}
		sw.Kept++
		sw.KeptBytes += int64(len(m.Data))
	}
	return p.wait(ctx)
}

// unlessDeleted removes the blobs a sweep wrote again, by subject and
// revision, if the session turns out to have been deleted meanwhile: they
// belong to it as it was before the deletion.
func (s *JetStream) unlessDeleted(ctx context.Context, session string, written map[string]uint64) error {
	_, err := s.Load(ctx, session)
	if !errors.Is(err, ErrNotFound) {
		return nil
	}
	for subject, rev := range written {
		if err := s.purge(ctx, s.state, subject, rev+1); err != nil {
			return err
		}
	}
	return nil
}

// Delete implements Store.
func (s *JetStream) Delete(ctx context.Context, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	for {
		h, err := s.Load(ctx, session)
		if err != nil {
			return err
		}
		ok, err := s.remove(ctx, session, h.Rev)
		if err != nil {
			return fail("delete", session, err)
		}
		if ok {
			return nil
		}
	}
}

// remove deletes a session if its head is at revision rev, and reports
// whether it did.
func (s *JetStream) remove(ctx context.Context, session string, rev uint64) (bool, error) {
	mark, err := s.putHead(ctx, session, rev, nil, nats.Header{opHeader: []string{opDelete}})
	switch {
	case errors.Is(err, errMoved), errors.Is(err, ErrNotFound):
		return false, nil // committed or deleted meanwhile
	case err != nil:
		return false, err
	}
	return true, s.finishDelete(ctx, session, mark)
}

// finishDelete purges what a session stored before its deletion marker at
// revision mark, then replaces the marker with one that Expire removes in
// time, unless something replaced it meanwhile.
func (s *JetStream) finishDelete(ctx context.Context, session string, mark uint64) error {
	if err := s.purgeBlobs(ctx, session, mark); err != nil {
		return err
	}
	if err := s.purge(ctx, s.log, s.logSubject(session), 0); err != nil {
		return err
	}
	_, err := s.putHead(ctx, session, mark, nil, nats.Header{opHeader: []string{opDeleted}})
	if errors.Is(err, errMoved) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Expire implements Store. It also finishes deletions that a crash
// interrupted, which it finds by their markers, and removes the markers of
// finished deletions made before the cutoff or deletedTTL ago, whichever
// is later.
func (s *JetStream) Expire(ctx context.Context, before time.Time) (int, error) {
	ctx, cancel := s.begin(ctx)
	defer cancel()
	type head struct {
		session string
		rev     uint64
		op      string
	}
	var old []head
	marked := time.Now().Add(-deletedTTL)
	if before.After(marked) {
		marked = before
	}
	prefix := s.headSubject("")
	err := s.scan(ctx, s.state, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + "*"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	}, 0, func() { old = old[:0] }, func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		op := m.Headers().Get(opHeader)
		if op == opDelete || op == "" && meta.Timestamp.Before(before) || op == opDeleted && meta.Timestamp.Before(marked) {
			old = append(old, head{strings.TrimPrefix(m.Subject(), prefix), meta.Sequence.Stream, op})
		}
	})
	if err != nil {
		return 0, fail("expire", "", err)
	}
	n := 0
	for _, h := range old {
		switch h.op {
		case opDelete:
			err = s.finishDelete(ctx, h.session, h.rev)
		case opDeleted:
			// Only the marker itself: a head created since stays.
			err = s.purge(ctx, s.state, s.headSubject(h.session), h.rev+1)
		default:
			var ok bool
			ok, err = s.remove(ctx, h.session, h.rev)
			if ok {
				n++
			}
		}
		if err != nil {
			return n, fail("expire", h.session, err)
		}
	}
	return n, nil
}

// Heads implements Store with one scan of the last message of every head
// subject; deletion markers are left out.
func (s *JetStream) Heads(ctx context.Context) ([]SessionHead, error) {
	ctx, cancel := s.begin(ctx)
	defer cancel()
	var out []SessionHead
	prefix := s.headSubject("")
	err := s.scan(ctx, s.state, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + "*"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}, 0, func() { out = out[:0] }, func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		if !isDeleted(m.Headers()) {
			out = append(out, SessionHead{Session: strings.TrimPrefix(m.Subject(), prefix), Head: Head{Data: m.Data(), Rev: meta.Sequence.Stream, Time: meta.Timestamp}})
		}
	})
	if err != nil {
		return nil, fail("heads", "", err)
	}
	return out, nil
}

// scan delivers to fn the messages of st that an ordered consumer with cfg
// finds: those it counts when it starts or, if until is not 0, those up to
// the one at sequence until. The consumer may run on a replica that lags,
// so a scan that must see a write names it in until. An attempt that fails
// midway is started over, after reset.
//
// The consumer is deleted when the scan ends: while a stream has a
// consumer, every write and removal of a message in it costs the server a
// look at the consumer's filter.
func (s *JetStream) scan(ctx context.Context, st jetstream.Stream, cfg jetstream.OrderedConsumerConfig, until uint64, reset func(), fn func(jetstream.Msg, *jetstream.MsgMetadata)) error {
	cfg.InactiveThreshold = 10 * time.Second
	return retry(ctx, func(actx context.Context) (bool, error) {
		reset()
		c, err := st.OrderedConsumer(actx, cfg)
		if err != nil {
			return s.settled(err), err
		}
		defer func() {
			if info := c.CachedInfo(); info != nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
				_ = st.DeleteConsumer(dctx, info.Name) // else it goes after InactiveThreshold
				cancel()
			}
		}()
		if until == 0 && c.CachedInfo().NumPending == 0 {
			return true, nil
		}
		it, err := c.Messages(pullExpiry, pullHeartbeat)
		if err != nil {
			return s.settled(err), err
		}
		defer it.Stop()
		for {
			// The whole scan may outlast one attempt's deadline. When
			// messages stop coming, those still counted as pending may
			// have been removed meanwhile: the consumer says.
			next, cancel := context.WithTimeout(ctx, scanIdle)
			m, err := it.Next(jetstream.NextContext(next))
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				if info, err := c.Info(ctx); err == nil && info.NumPending == 0 {
					return true, nil
				}
				continue
			}
			if err != nil {
				return s.settled(err), err
			}
			meta, err := m.Metadata()
			if err != nil {
				return true, err
			}
			fn(m, meta)
			if until != 0 && meta.Sequence.Stream >= until || until == 0 && meta.NumPending == 0 {
				return true, nil
			}
		}
	})
}

// AppendLog implements Store. The entries travel in one message, framed
// each by its length (logFrames), or in as few as MaxValue allows. A
// message sent again after a lost answer is recognised by its id and
// stored once.
func (s *JetStream) AppendLog(ctx context.Context, session string, entries ...[]byte) error {
	if err := checkLog(session, entries); err != nil {
		return err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	for _, msg := range logFrames(entries) {
		id := nuid.Next()
		err := s.do(ctx, func(ctx context.Context) error {
			_, err := s.js.Publish(ctx, s.logSubject(session), msg, jetstream.WithMsgID(id))
			return err
		})
		if err != nil {
			return fail("append log", session, err)
		}
	}
	return nil
}

// logFrames returns the messages that carry entries: each entry as its
// length (a uvarint) and its bytes, as many entries in a message as fit in
// MaxValue.
func logFrames(entries [][]byte) [][]byte {
	var msgs [][]byte
	var msg []byte
	for _, e := range entries {
		if len(msg) > 0 && len(msg)+binary.MaxVarintLen32+len(e) > MaxValue {
			msgs, msg = append(msgs, msg), nil
		}
		msg = binary.AppendUvarint(msg, uint64(len(e)))
		msg = append(msg, e...)
	}
	if len(entries) > 0 {
		msgs = append(msgs, msg)
	}
	return msgs
}

// logEntries appends the entries of a message of logFrames to out.
func logEntries(out [][]byte, msg []byte) ([][]byte, error) {
	for len(msg) > 0 {
		n, k := binary.Uvarint(msg)
		if k <= 0 || n > uint64(len(msg)-k) {
			return out, errors.New("store: malformed call log message")
		}
		out = append(out, msg[k:k+int(n)])
		msg = msg[k+int(n):]
	}
	return out, nil
}

// ReadLog implements Store. The log's last message is read from the
// stream's leader, and the scan, which may run on a replica that lags,
// goes on until it has seen that message.
func (s *JetStream) ReadLog(ctx context.Context, session string, n int) ([][]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	subject := s.logSubject(session)
	var end *jetstream.RawStreamMsg
	err := s.do(ctx, func(ctx context.Context) (err error) {
		end, err = last(ctx, s.log, subject)
		return err
	})
	if errors.Is(err, ErrNotFound) || err == nil && n <= 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fail("read log", session, err)
	}
	var out [][]byte
	var derr error
	err = s.scan(ctx, s.log, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}, end.Sequence, func() { out, derr = out[:0], nil }, func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		if meta.Sequence.Stream <= end.Sequence && derr == nil {
			out, derr = logEntries(out, m.Data())
		}
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fail("read log", session, err)
	}
	// A lagging replica delivers messages it has not yet dropped.
	return out[max(0, len(out)-min(n, s.retention)):], nil
}

// Watch implements Store, with an ordered consumer of the head subjects
// that carries headers only and picks up where it was after a failover. It
// starts after the stream's last message as the leader reports it: an
// ordered consumer told to deliver new messages would take "new" afresh
// each time it starts over.
func (s *JetStream) Watch(ctx context.Context) (<-chan Change, error) {
	start, cancel := s.begin(ctx)
	defer cancel()
	prefix := s.headSubject("")
	var c jetstream.Consumer
	err := s.do(start, func(actx context.Context) error {
		info, err := s.state.Info(actx)
		if err != nil {
			return err
		}
		c, err = s.state.OrderedConsumer(actx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{prefix + "*"},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    info.State.LastSeq + 1,
			HeadersOnly:    true,
		})
		return err
	})
	if err != nil {
		return nil, fail("watch", "", err)
	}
	out := make(chan Change)
	stop := make(chan struct{})
	// sending is read-held by a handler while it sends, and write-held
	// to close out: an ordered consumer that started over (after its
	// connection came back) may still run a handler of the consumer it
	// replaced once its Closed is, without anything ordering the two.
	var sending sync.RWMutex
	ended := false
	cc, err := c.Consume(func(m jetstream.Msg) {
		sending.RLock()
		defer sending.RUnlock()
		if ended {
			return
		}
		ch := Change{Session: strings.TrimPrefix(m.Subject(), prefix)}
		if !isDeleted(m.Headers()) {
			meta, err := m.Metadata()
			if err != nil {
				return
			}
			ch.Rev = meta.Sequence.Stream
		}
		select {
		case out <- ch:
		case <-stop:
		}
	}, watchExpiry, watchHeartbeat)
	if err != nil {
		return nil, fail("watch", "", err)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		close(stop)
		cc.Stop()
		<-cc.Closed()
		sending.Lock()
		ended = true
		close(out)
		sending.Unlock()
	}()
	return out, nil
}

// Shared reports whether other processes may write to the store: always
// for an external cluster (Connect); for a state dir (OpenEmbedded), once
// another process has been seen on it, from then on.
func (s *JetStream) Shared() bool { return s.host == nil || s.host.shared() }

// Sharing returns a channel closed once Shared reports true: at once for
// an external cluster, and for a state dir when another process is first
// seen on it (the holder of the dir hears it when it connects).
func (s *JetStream) Sharing() <-chan struct{} {
	if s.host == nil {
		return closed
	}
	return s.host.sharing
}

// closed is a closed channel.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Close implements Store. It closes the connection, then stops the
// embedded server and releases the state dir.
func (s *JetStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.nc.Close()
		if s.host != nil {
			s.host.close()
		}
	})
	return nil
}
