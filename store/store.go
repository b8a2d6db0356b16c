// Package store keeps the state of sessions durably, behind one interface
// with three ways to run it: in process memory (NewMemory), on a NATS server
// with JetStream embedded in the process (OpenEmbedded), and on an external
// NATS cluster (Connect). The last two are one implementation, JetStream,
// that differs only in how it reaches the server. All three pass one
// contract test suite.
//
// # Data model
//
// A session is a small head record, a set of blobs and a call log.
//
// The head is opaque bytes to the store, with a revision. Create stores the
// first head of a session; Commit replaces it by compare-and-swap on the
// revision the caller loaded, so of two calls that loaded the same revision
// exactly one commits and the other gets ErrConflict.
//
// A blob is content-addressed: its key is Hash of its bytes. Blobs belong to
// one session (there is no sharing across sessions, so no reference
// counting): deleting a session purges its blobs by prefix. Commit writes
// the blobs before the head, so a head never refers to a blob that is not
// stored; a crash between the two leaves unreferenced blobs, never a head
// that points at nothing.
//
// A blob may also be located (PutData): stored under the revision it was
// written at, and named by that revision and the hash of its content
// (package blobname), for the bulk of a session's blobs, its files'
// contents, which the JetStream store keeps on one subject per session
// rather than one subject per blob. The caller stores them before the
// commit whose head refers to them, and they follow every rule below as
// the blobs of Commit do.
//
// Heads and blobs draw their revisions from one sequence, which is what
// makes reclamation safe while commits run:
//
//   - Sweep(rev, live) removes only the blobs written before rev that the
//     head at rev does not use. A commit made on rev or later writes every
//     blob its new head refers to and the loaded head did not, even one
//     that is still stored (it is written again rather than created
//     if-absent), so those blobs carry a later revision and survive.
//   - Remove(rev, hashes) is the same rule for blobs the caller names:
//     only their copies written before rev go.
//   - Delete marks the head deleted and purges the blobs written before the
//     mark. Create stores a head that refers to no blob, so a session
//     created again under the name writes all its blobs after the mark.
//   - A commit that loaded a session deleted since purges the blobs it
//     wrote, as everything of that session up to them predates any new
//     session of the name.
//
// The call log is append-only, per session. It keeps at least the last
// Options.LogRetention entries, and reads return no more than that: the
// memory store keeps exactly those, the JetStream store the entries of the
// session's last Options.LogRetention appends, each of one or more entries.
//
// # Tasks
//
// A task's record is opaque bytes to the store, kept under its owner and
// its id (both named like sessions), with a revision: PutTask writes it by
// compare-and-swap on the revision the caller read (0 for a task not yet
// stored), and the store deletes it once it has been kept as long as its
// last write asked. Records belong to no session: deleting or expiring a
// session leaves its tasks' records, which end on their own. Task reads
// one record from the stream's leader, Tasks every record of an owner.
//
// # Time and expiry
//
// Head.Time is when the head was last committed, by the store's clock.
// Expire deletes every session whose head is older than a cutoff, with its
// blobs and log; it is meant to run periodically, on any number of replicas
// at once. Only commits count as use: a caller that keeps a session alive on
// reads re-commits the unchanged head (Commit with no blobs) once Head.Time
// is older than a fraction of the idle limit, which keeps the tracking of
// use free for calls that change state and cheap for those that do not.
//
// # Replicas
//
// Reads of heads and blobs are answered by the stream's leader, so a
// replica sees every commit acknowledged to another. Watch reports head
// changes made through any replica, for notifications; it may skip a
// revision that was replaced before it was delivered.
//
// # Failures
//
// Every call honours its context's deadline, and applies Options.Timeout
// when the context has none. A store that cannot be reached (closed, its
// server stopped, no answer before the deadline) returns an error wrapping
// ErrUnavailable; a refusal by the server is returned as such. A commit
// whose answer is lost (a server fails over while the request is in
// flight) is sent again and settled by reading the head, which records
// which commit wrote it: Commit returns the new revision only if the head
// is this commit's, ErrConflict if another commit moved it, and
// ErrUnavailable if it cannot tell before the deadline, in which case the
// caller must Load before assuming either.
package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wink-mcp/wink-mcp/blobname"
)

// Store is the durable home of session state. Every method is safe for
// concurrent use. Session names are 1 to 128 letters, digits, '-' or '_'.
type Store interface {
	// Create stores the first head of a session and returns its revision.
	// It returns ErrExists if the session exists.
	Create(ctx context.Context, session string, head []byte) (uint64, error)

	// Load returns the session's head. It returns ErrNotFound for a session
	// that does not exist or was deleted.
	Load(ctx context.Context, session string) (Head, error)

	// Commit writes blobs, keyed by Hash of their content, then replaces the
	// head at revision rev with head, and returns the new revision. blobs
	// must hold every blob the new head refers to that the head at rev did
	// not. It returns ErrConflict if the head is no longer at rev, and
	// ErrNotFound if the session was deleted.
	Commit(ctx context.Context, session string, rev uint64, head []byte, blobs map[string][]byte) (uint64, error)

	// PutData stores each of contents as a located blob of the session,
	// in order, and returns their names: a located blob is found by the
	// revision it was written at, which its name (blobname.Located) holds
	// beside the hash of its content, rather than by the hash alone, so
	// that the many blobs of a session's files cost the store one subject
	// rather than one each. The same content stored twice is two blobs.
	// A located blob belongs to the session as a content-addressed one
	// does: Remove, Sweep, Delete and Expire remove it alike, and its
	// revision follows the same rule (one written after rev is kept). It
	// is never written again: a commit whose head refers to it must come
	// after PutData returned, and a sweep keeps it where it is. Each
	// content is at most MaxValue bytes.
	PutData(ctx context.Context, session string, contents [][]byte) ([]string, error)

	// Blob returns the content of one of the session's blobs, named by
	// the hash of its content or located (see PutData), or ErrNotFound.
	// A located name whose revision holds no blob of the session with
	// that hash is not found.
	Blob(ctx context.Context, session, name string) ([]byte, error)

	// Sweep removes the session's blobs that were written before revision
	// rev and for which live reports false, and says what it removed and
	// kept. live is asked with each blob's name, content-addressed or
	// located as the blob was stored, and must report true for every blob
	// the head at rev refers to. Blobs written after rev are kept whatever
	// live says.
	Sweep(ctx context.Context, session string, rev uint64, live func(name string) bool) (Swept, error)

	// Remove removes the session's blobs named by names (content-addressed
	// or located) that were written before revision rev, and returns how
	// many of names it looked for. The head at rev must not use any of
	// them: Remove is a Sweep whose caller knows which blobs are dead, and
	// costs what it removes rather than a look at every blob. A blob
	// written again at rev or later is kept. A located name must be one
	// that PutData returned for the session: the blob at its revision is
	// removed without being read.
	Remove(ctx context.Context, session string, rev uint64, names []string) (int, error)

	// Heads returns the head of every session, in no order: a scan of
	// the store, for a view of its sessions (not for a call's path).
	Heads(ctx context.Context) ([]SessionHead, error)

	// Delete removes the session's head, blobs and log. It returns
	// ErrNotFound if the session does not exist. A commit that loaded the
	// session before gets ErrNotFound, and its blobs are purged again.
	Delete(ctx context.Context, session string) error

	// Expire deletes every session whose head was last committed before
	// the cutoff, as Delete does, and returns how many it deleted. A
	// session committed meanwhile is kept.
	Expire(ctx context.Context, before time.Time) (int, error)

	// Watch reports the changes of heads made after it returns, by any
	// client of the store, until ctx ends or the store is closed; then the
	// channel is closed. A revision replaced before it is delivered may be
	// skipped, so a receiver learns at least each session's latest
	// revision; a deletion may be reported twice. The receiver must keep
	// reading.
	Watch(ctx context.Context) (<-chan Change, error)

	// AppendLog adds entries to the end of the session's call log, in
	// order, as one append: however many they are, they cost the store
	// one write (more only for entries too large to travel together).
	AppendLog(ctx context.Context, session string, entries ...[]byte) error

	// ReadLog returns the last n entries of the session's call log, oldest
	// first, and never more than Options.LogRetention.
	ReadLog(ctx context.Context, session string, n int) ([][]byte, error)

	// PutTask stores record as the record of the task id of owner, in
	// place of the one at revision rev (0: the task is not stored yet), and
	// returns the record's new revision. It returns ErrConflict if the
	// record is not at rev. The record is kept for keep after this write
	// (at least a second), then deleted.
	PutTask(ctx context.Context, owner, id string, rev uint64, record []byte, keep time.Duration) (uint64, error)

	// Task returns the record of the task id of owner and its revision, or
	// ErrNotFound.
	Task(ctx context.Context, owner, id string) ([]byte, uint64, error)

	// Tasks returns the records of every task of owner, in the order they
	// were last written.
	Tasks(ctx context.Context, owner string) ([][]byte, error)

	// Close releases the store. Calls made after it return ErrUnavailable.
	Close() error
}

// SessionHead is a session's head, with the session's name.
type SessionHead struct {
	Session string
	Head
}

// Head is a session's head record as loaded.
type Head struct {
	// Data is the caller's head bytes.
	Data []byte
	// Rev is the revision to pass to Commit.
	Rev uint64
	// Time is when the head was last committed.
	Time time.Time
}

// Swept is what a Sweep did: the blobs it removed, and those written
// before its revision that it kept, with the bytes of those it wrote again
// to keep them (located blobs are kept where they are, for nothing).
type Swept struct {
	Removed   int
	Kept      int
	KeptBytes int64
}

// Change reports that a session's head moved to revision Rev, or, when Rev
// is 0, that the session was deleted.
type Change struct {
	Session string
	Rev     uint64
}

// Errors that callers branch on. Errors returned by the store wrap them.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("session exists")
	ErrConflict    = errors.New("head moved since it was loaded")
	ErrInvalid     = errors.New("invalid argument")
	ErrUnavailable = errors.New("store unavailable")
	// ErrIncompatible is the error of opening a store that another version
	// of wink-mcp wrote in a format this one does not read.
	ErrIncompatible = errors.New("written by an incompatible version")
)

// MaxValue is the largest head, blob or log entry the store accepts: the
// default max_payload of a NATS server (1 MiB) less room for the subject
// and headers that travel with it. Larger content must be split by the
// caller.
const MaxValue = 1<<20 - 16<<10

// Options configures a store. The zero value is usable.
type Options struct {
	// Logger receives the embedded server's warnings and errors, and
	// those of the store's connection; nil discards them. Neither writes
	// to stdout or stderr.
	Logger *slog.Logger
	// Timeout bounds a call whose context has no deadline; 0 means 5s. A
	// cluster elects a new leader seconds after a node crashes (up to about
	// 10s), and a call that must outlast that needs a longer deadline.
	Timeout time.Duration
	// LogRetention is the number of call log entries kept per session
	// (see the package doc); 0 means 1000.
	LogRetention int
	// Name prefixes the store's streams and subjects, so that several
	// stores can share one NATS account; it is lower-case letters, digits,
	// '-' or '_'. Empty means "wink".
	Name string
	// SyncAlways makes the embedded server flush every write to disk
	// before acknowledging it, so that a power loss loses no acknowledged
	// commit; by default the server syncs on an interval (2 minutes) and a
	// power loss can lose up to that much. A process kill loses nothing
	// either way. External servers have their own setting.
	SyncAlways bool
	// Dormancy is how long the holder of a state dir (OpenEmbedded) keeps
	// its server running once no call has used the store and no other
	// process is connected to it; then it stops the server, whose own
	// clocks wake the process many times a second, and releases the dir,
	// until the next call starts it again (or another process arriving
	// takes the dir). 0 keeps the server running. Other stores ignore it.
	Dormancy time.Duration
	// Replicas is the number of servers each stream is kept on in an
	// external cluster, for instance 3; 0 means 1. The embedded store
	// always keeps one.
	Replicas int
	// CredsFile is a NATS credentials file used to connect to an external
	// cluster.
	CredsFile string
	// TLS, when set, is used to connect to an external cluster.
	TLS *tls.Config
	// Migrations are the steps that bring a store written in an older
	// format to Format, one for each format before it (see Format). A
	// store in a format without its step here is refused.
	Migrations []Step
}

// Hash returns the key of a blob: the hex SHA-256 of its content, its
// content-addressed name.
func Hash(content []byte) string { return blobname.Hash(content) }

// ValidSession reports whether name can name a session.
func ValidSession(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// withDefaults returns opts with its zero settings replaced by defaults.
func (opts Options) withDefaults() Options {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.LogRetention <= 0 {
		opts.LogRetention = 1000
	}
	if opts.Name == "" {
		opts.Name = "wink"
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	return opts
}

// deadline returns ctx bounded by timeout when it has no deadline.
func deadline(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// checkSession returns an ErrInvalid error if name cannot name a session.
func checkSession(name string) error {
	if !ValidSession(name) {
		return fmt.Errorf("store: session name %q: %w", name, ErrInvalid)
	}
	return nil
}

// checkTask validates the owner and id of a task.
func checkTask(owner, id string) error {
	if !ValidSession(owner) || !ValidSession(id) {
		return fmt.Errorf("store: task %q of %q: %w", id, owner, ErrInvalid)
	}
	return nil
}

// minKeep is the shortest time a task's record is kept: the least per-message
// TTL of a NATS server.
const minKeep = time.Second

// checkValue returns an ErrInvalid error if a value is larger than
// MaxValue.
func checkValue(what string, v []byte) error {
	if len(v) > MaxValue {
		return fmt.Errorf("store: %s of %d bytes exceeds %d: %w", what, len(v), MaxValue, ErrInvalid)
	}
	return nil
}

// checkCommit validates the arguments of Commit.
func checkCommit(session string, head []byte, blobs map[string][]byte) error {
	if err := checkSession(session); err != nil {
		return err
	}
	if err := checkValue("head", head); err != nil {
		return err
	}
	for h, b := range blobs {
		if err := checkValue("blob", b); err != nil {
			return err
		}
		if Hash(b) != h {
			return fmt.Errorf("store: blob key %q is not the hash of its content: %w", h, ErrInvalid)
		}
	}
	return nil
}

// checkLog validates the arguments of AppendLog.
func checkLog(session string, entries [][]byte) error {
	if err := checkSession(session); err != nil {
		return err
	}
	for _, e := range entries {
		if err := checkValue("log entry", e); err != nil {
			return err
		}
	}
	return nil
}

// checkName returns an ErrInvalid error if name cannot name a blob.
func checkName(name string) error {
	if _, _, ok := blobname.Split(name); !ok {
		return fmt.Errorf("store: blob name %q: %w", name, ErrInvalid)
	}
	return nil
}

// checkRemove checks the arguments of Store.Remove: a session's name and
// the names of its blobs.
func checkRemove(session string, names []string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	for _, n := range names {
		if err := checkName(n); err != nil {
			return err
		}
	}
	return nil
}

// checkData checks the arguments of Store.PutData.
func checkData(session string, contents [][]byte) error {
	if err := checkSession(session); err != nil {
		return err
	}
	for _, c := range contents {
		if err := checkValue("data", c); err != nil {
			return err
		}
	}
	return nil
}
