package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Format is the number of the format this version of the store writes.
// Every format since the store exists is read: a store in an older one is
// migrated, step by step, as it is opened (Options.Migrations), and one
// in a newer one is refused with ErrIncompatible, both numbers named, and
// left as it is.
//
// The formats:
//
//   - 1, written up to 2026-11-25: a head holds JSON naming the root blob
//     of the session's state; a call log message is one entry.
//   - 2: a head holds the state's root document inline (a binary record);
//     a call log message is one or more entries, each framed by its length
//     (logFrames).
//   - 3: a head may also carry the history's tail (magic whd2: the records
//     of the commits since the history's blob was written, each with its
//     state's root document), and the history's blob the root documents of
//     the states it names; a directory of more than 64 entries is a Merkle
//     search tree of directory blobs (wdir1 leaves, wmap1 nodes), and a
//     policy's memory of more than 32 files is a root document entry of
//     kind m naming a tree of its own (wstr1 leaves, wmap1 nodes). What
//     format 2 stored is read as it is, and stored anew by the first call
//     that changes it, so its step changes nothing but the markers, which
//     keep builds of format 2 away.
//   - 4: a head's tail (magic whd3) holds each root document as what it
//     changed of the one before it (the bytes shared at its start and its
//     end, and those between), not whole. A head of format 3 is read as
//     it is, and written anew by the next commit, so its step changes
//     nothing but the markers, which keep builds of format 3 away.
//   - 5: the history's blob is binary (magic whb1): its records as a
//     tail holds them, each with its state's root document chained as in
//     the tail, not JSON with its documents in base64. A blob of format 4
//     (or 3) is read as it is, and written anew by the next commit that
//     writes the history's blob, so its step changes nothing but the
//     markers, which keep builds of format 4 away.
//   - 6: the contents of files may be located blobs (PutData), messages
//     on one subject per session (NAME.data.SESSION) found by their
//     stream sequence, rather than one subject per blob, which a server
//     restarting indexes one by one; the state stream allows any number
//     of messages per subject and rollups, and heads and blobs keep one
//     message per subject by being published as rollups of their
//     subject. What format 5 stored is read as it is; its step changes
//     nothing but the markers, and the state stream's configuration is
//     brought to format 6 by the opening that follows the migration
//     (createStream), or by the next one if the process ends between the
//     two: a stream marked 6 is configured anew by every opening.
//
// A change of anything the store holds, the store's own framing or the
// caller's heads, blobs, log entries and task records, is a new format,
// with its step.
const Format = 6

// formatKey is the key of the streams' metadata that names the format of
// what they hold. A stream without the key holds format 1.
const formatKey = "wink-format"

// A Step migrates a store from format From to From+1, as far as what it
// holds is its caller's: heads, blobs, log entries, task records. The
// store converts its own framing (a call log's messages) itself.
//
// A migration may be cut short anywhere (the process killed) and is then
// run again from the start on the store as it was left: Migrate must
// recognise what it already converted, and must convert each unit whole
// or not at all (a session's head replaced by one commit, say).
type Step struct {
	From    int
	Migrate func(ctx context.Context, m *Migration) error
}

// Migration is what a Step works on: the store, open while its streams
// still say they hold the older format.
type Migration struct {
	Store  Store
	Logger *slog.Logger
	point  func()
}

// Point marks that a unit of the migration is done and durable. A test
// may have the process killed there (migrationDieAt).
func (m *Migration) Point() {
	if m.point != nil {
		m.point()
	}
}

// The lease of a migration of a store that no directory's lock guards (an
// external cluster): a task record (see PutTask) that the migrating
// process creates, by compare-and-swap, and writes again every leaseRenew
// while it migrates; it is removed when the migration ends, and expires
// leaseKeep after the last write of a process that died.
const (
	leaseOwner = "_wink-migration"
	leaseID    = "lease"
	leaseKeep  = 30 * time.Second
	leaseRenew = 10 * time.Second
)

// lease takes the lease of the store's migration, if no other process
// holds it, and returns the function that gives it back.
func (s *JetStream) lease(ctx context.Context) (release func(), ok bool, err error) {
	if s.tasks == nil {
		return nil, false, fmt.Errorf("store: the store has no task stream to hold the lease of its migration in: %w", ErrIncompatible)
	}
	id := []byte(nuid.Next())
	rev, err := s.PutTask(ctx, leaseOwner, leaseID, 0, id, leaseKeep)
	if errors.Is(err, ErrConflict) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			next, err := s.PutTask(context.Background(), leaseOwner, leaseID, rev, id, leaseKeep)
			if err != nil {
				s.logger.Warn("renewing the lease of the store's migration failed", "err", err)
				continue
			}
			rev = next
		}
	}()
	return func() {
		close(stop)
		<-done
		_ = s.purge(context.Background(), s.tasks, s.taskSubject(leaseOwner, leaseID), 0)
	}, true, nil
}

// migrationDieAt names the environment variable that, set to N, has the
// process kill itself (SIGKILL) at the Nth point of a migration: the
// tests' way to cut one short at each point. Nothing else reads it.
const migrationDieAt = "WINK_TEST_MIGRATION_DIE_AT"

// streamFormat returns the format a stream's configuration says it
// holds.
func streamFormat(cfg *jetstream.StreamConfig) (int, error) {
	v, ok := cfg.Metadata[formatKey]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("store: stream %s names its format %q: %w", cfg.Name, v, ErrIncompatible)
	}
	return n, nil
}

// errNewer is the error of a stream in a format newer than Format.
func errNewer(stream string, found int) error {
	return fmt.Errorf("store: stream %s holds format %d, and this version of wink-mcp reads formats 1 to %d: %w", stream, found, Format, ErrIncompatible)
}

// errNoStep is the error of a stream in an older format that this opening
// has no step for.
func errNoStep(stream string, found int) error {
	return fmt.Errorf("store: stream %s holds format %d, and this version of wink-mcp writes format %d and was given no migration from format %d: %w", stream, found, Format, found, ErrIncompatible)
}

// ErrMigrating is wrapped by the error of opening, while another process
// migrates it, a store that this process may not migrate itself.
var ErrMigrating = errors.New("being migrated by another process")

// dataPerSubject bounds the messages of one subject of the state stream:
// no session stores that many contents.
const dataPerSubject = 1 << 40

// streams is the configuration of each of the store's streams, the
// state's first.
func (s *JetStream) streams(opts Options) []jetstream.StreamConfig {
	prefix := strings.ToUpper(opts.Name)
	single, dedup := opts.Replicas == 1, dedupWindow
	if single {
		dedup = minDedupWindow
	}
	return []jetstream.StreamConfig{{
		Name:     prefix + "_STATE",
		Subjects: []string{s.name + ".head.*", s.name + ".blob.*.*", s.name + ".data.*"},
		Storage:  jetstream.FileStorage,
		Replicas: opts.Replicas,
		// A data subject holds many messages; a head's or a blob's holds
		// one, each published as a rollup of its subject (JetStream.one).
		// The limit is never reached (dataPerSubject), and keeps the
		// server's blocks at 4 MiB, as for a stream of one message a
		// subject: with none it makes them 8 MiB, and a process that
		// writes large files holds about 25 MiB more of them.
		MaxMsgsPerSubject: dataPerSubject,
		AllowRollup:       true,
		Discard:           jetstream.DiscardOld,
		Duplicates:        dedup,
		AllowDirect:       single,
	}, {
		Name:              prefix + "_LOG",
		Subjects:          []string{s.name + ".log.*"},
		Storage:           jetstream.FileStorage,
		Replicas:          opts.Replicas,
		MaxMsgsPerSubject: int64(opts.LogRetention),
		Discard:           jetstream.DiscardOld,
		Duplicates:        dedup,
		AllowDirect:       single,
	}, {
		Name:              prefix + "_TASKS",
		Subjects:          []string{s.name + ".task.*.*"},
		Storage:           jetstream.FileStorage,
		Replicas:          opts.Replicas,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		Duplicates:        dedup,
		AllowDirect:       single,
		AllowMsgTTL:       true,
	}}
}

// formats returns the format of each of the store's streams as cfgs name
// them, and the stream itself when it exists; a stream that does not
// exist yet gets the format of the state stream (Format if none exists).
func (s *JetStream) formats(ctx context.Context, cfgs []jetstream.StreamConfig) ([]int, []jetstream.Stream, error) {
	found := make([]int, len(cfgs))
	streams := make([]jetstream.Stream, len(cfgs))
	for i, cfg := range cfgs {
		err := retry(ctx, func(ctx context.Context) (bool, error) {
			st, err := s.js.Stream(ctx, cfg.Name)
			switch {
			case errors.Is(err, jetstream.ErrStreamNotFound):
				streams[i] = nil
				return true, nil
			case err != nil:
				return s.nc.IsClosed(), err
			}
			streams[i] = st
			return true, nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("store: stream %s: %w: %w", cfg.Name, ErrUnavailable, err)
		}
		found[i] = 0
		if streams[i] != nil {
			f, err := streamFormat(&streams[i].CachedInfo().Config)
			if err != nil {
				return nil, nil, err
			}
			if f > Format {
				return nil, nil, errNewer(cfg.Name, f)
			}
			found[i] = f
		}
	}
	for i := range found {
		switch {
		case found[i] != 0:
		case found[0] != 0:
			found[i] = found[0]
		default:
			found[i] = Format
		}
	}
	return found, streams, nil
}

// migrate brings the store's streams from the formats found to Format, a
// step at a time: for each step, the caller's part (the Step of
// opts.Migrations), then the store's own, and then the streams' markers,
// the state stream's last, which is the step's commit.
func (s *JetStream) migrate(ctx context.Context, opts Options, cfgs []jetstream.StreamConfig, found []int, streams []jetstream.Stream) error {
	dieAt, _ := strconv.Atoi(os.Getenv(migrationDieAt))
	var points atomic.Int64
	point := func() {
		if n := points.Add(1); dieAt > 0 && n == int64(dieAt) {
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Kill()
			select {} // the signal is on its way
		}
	}
	s.state, s.log, s.tasks = streams[0], streams[1], streams[2]
	for from := slices.Min(found); from < Format; from++ {
		i := -1
		for j, st := range opts.Migrations {
			if st.From == from {
				i = j
			}
		}
		if i < 0 {
			return errNoStep(cfgs[0].Name, from)
		}
		start := time.Now()
		opts.Logger.Info("migrating the session store", "from", from, "to", from+1)
		m := &Migration{Store: s, Logger: opts.Logger, point: point}
		if step := opts.Migrations[i]; step.Migrate != nil {
			if err := step.Migrate(ctx, m); err != nil {
				return fmt.Errorf("store: migrating from format %d to %d: %w", from, from+1, err)
			}
		}
		if from == 1 && found[1] == 1 && s.log != nil {
			if err := s.migrateLog1(ctx, point); err != nil {
				return fmt.Errorf("store: migrating the call log from format 1 to 2: %w", err)
			}
		}
		// The markers: the state stream's last, so that a migration cut
		// short before it is run again.
		for _, k := range []int{1, 2, 0} {
			if streams[k] == nil || found[k] > from {
				continue
			}
			if err := s.mark(ctx, streams[k], from+1); err != nil {
				return err
			}
			found[k] = from + 1
			point()
		}
		opts.Logger.Info("migrated the session store", "from", from, "to", from+1, "ms", time.Since(start).Milliseconds())
	}
	return nil
}

// mark records in the configuration of st that it holds format f.
func (s *JetStream) mark(ctx context.Context, st jetstream.Stream, f int) error {
	cfg := st.CachedInfo().Config
	md := map[string]string{}
	for k, v := range cfg.Metadata {
		md[k] = v
	}
	md[formatKey] = strconv.Itoa(f)
	cfg.Metadata = md
	err := retry(ctx, func(ctx context.Context) (bool, error) {
		_, err := s.js.UpdateStream(ctx, cfg)
		return err == nil || s.nc.IsClosed(), err
	})
	if err != nil {
		return fmt.Errorf("store: marking stream %s as format %d: %w: %w", cfg.Name, f, ErrUnavailable, err)
	}
	return nil
}

// migratedHeader marks a call log message that a migration from format 1
// wrote: its value is the sequence of the last format-1 message whose
// entry it carries, so that a migration run again after a crash neither
// copies an entry twice nor loses one.
const migratedHeader = "Wink-Migrated-From"

// migrateLog1 rewrites every session's call log from format 1, an entry
// a message, to the framing of format 2: each log's entries are published
// again, framed, as few messages as MaxValue allows, after the others;
// only then are the format-1 messages purged.
func (s *JetStream) migrateLog1(ctx context.Context, point func()) error {
	prefix := s.logSubject("")
	var subjects []string
	err := s.scan(ctx, s.log, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + "*"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	}, 0, func() { subjects = subjects[:0] }, func(m jetstream.Msg, _ *jetstream.MsgMetadata) {
		subjects = append(subjects, m.Subject())
	})
	if err != nil {
		return err
	}
	for _, subject := range subjects {
		if err := s.migrateLogSubject(ctx, subject, point); err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(subject, prefix), err)
		}
		point()
	}
	return nil
}

// isLog1 reports whether a call log message is of format 1, one entry:
// the entries the server logs are JSON objects, and a message of format 2
// starts with the length of its first entry, which is never a JSON
// object whole (a length of 123 is the byte '{', but then an entry
// starting with '{' follows).
func isLog1(msg []byte) bool {
	return len(msg) > 1 && msg[0] == '{' && msg[1] != '{' && json.Valid(msg)
}

// migrateLogSubject rewrites one session's call log (migrateLog1).
func (s *JetStream) migrateLogSubject(ctx context.Context, subject string, point func()) error {
	var end *jetstream.RawStreamMsg
	err := s.do(ctx, func(ctx context.Context) (err error) {
		end, err = last(ctx, s.log, subject)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	type raw struct {
		seq  uint64
		data []byte
	}
	var old []raw
	var copied, firstNew uint64 // the last format-1 message copied, the first copy
	err = s.scan(ctx, s.log, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}, end.Sequence, func() { old, copied, firstNew = old[:0], 0, 0 }, func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		if v := m.Headers().Get(migratedHeader); v != "" {
			from, _ := strconv.ParseUint(v, 10, 64)
			copied = max(copied, from)
			if firstNew == 0 {
				firstNew = meta.Sequence.Stream
			}
			return
		}
		if !isLog1(m.Data()) {
			// Framed already: written by a version of format 2 or later
			// on a store whose marker a version before markers dropped.
			if firstNew == 0 {
				firstNew = meta.Sequence.Stream
			}
			return
		}
		old = append(old, raw{meta.Sequence.Stream, m.Data()})
	})
	if err != nil {
		return err
	}
	// The messages to publish: each with as many entries as fit, and the
	// sequence of the last.
	var msg []byte
	var lastSeq uint64
	publish := func() error {
		if msg == nil {
			return nil
		}
		m := &nats.Msg{Subject: subject, Data: msg, Header: nats.Header{migratedHeader: []string{strconv.FormatUint(lastSeq, 10)}}}
		var ack *jetstream.PubAck
		err := s.do(ctx, func(ctx context.Context) (err error) {
			ack, err = s.js.PublishMsg(ctx, m, jetstream.WithMsgID(subject+"-"+m.Header.Get(migratedHeader)))
			return err
		})
		if err != nil {
			return err
		}
		if firstNew == 0 {
			firstNew = ack.Sequence
		}
		msg = nil
		return nil
	}
	for _, r := range old {
		if r.seq <= copied {
			continue
		}
		if msg != nil && len(msg)+binary.MaxVarintLen32+len(r.data) > MaxValue {
			if err := publish(); err != nil {
				return err
			}
		}
		msg = binary.AppendUvarint(msg, uint64(len(r.data)))
		msg = append(msg, r.data...)
		lastSeq = r.seq
	}
	if err := publish(); err != nil {
		return err
	}
	if firstNew == 0 {
		return nil
	}
	point() // copied, not yet purged
	if err := s.purge(ctx, s.log, subject, firstNew); err != nil {
		return err
	}
	// Format-1 messages after a framed one (none but on a store that a
	// version before markers wrote to again) go one by one.
	for _, r := range old {
		if r.seq > firstNew {
			err := s.do(ctx, func(ctx context.Context) error {
				err := s.log.DeleteMsg(ctx, r.seq)
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					return nil
				}
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
