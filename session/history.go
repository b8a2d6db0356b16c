package session

import (
	"context"
	"time"
)

// History is a session's history as the server keeps it (package
// sessions): the last commits of the calls that changed the session, its
// named checkpoints, and the way back to them. The server gives each call
// its part in it, in the call's context (HistoryFrom), when it keeps
// histories; the history section's tools read, undo and restore through
// it.
type History interface {
	// Retention is how many commits, and checkpoints, the history keeps.
	Retention() int
	// Log returns the history as the session's commits so far left it.
	Log(ctx context.Context) (*HistoryLog, error)
	// RestoreTo puts s, the session of the call, back at the state after
	// commit seq of its history, whose root is root: its state, and the
	// files outside it that the commits since changed. It returns the
	// paths it put back, a directory's ending with "/", or refused, why it
	// changed nothing (a file changed outside the server since). The
	// call's commit records the commits since as undone.
	RestoreTo(ctx context.Context, s *Session, seq uint64, root string) (files []string, refused string, err error)
	// Checkpoint names the point the call's commit reaches.
	Checkpoint(name string)
}

// HistoryLog is a session's history: the commits kept, oldest first, and
// the named checkpoints, as the store keeps them.
type HistoryLog struct {
	// Next is the number of the next commit; the first is 1.
	Next    uint64          `json:"next"`
	Commits []HistoryCommit `json:"commits,omitempty"`
	// Checkpoints are the named points of the session, oldest first.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	// Lost is the number of the newest commit no longer kept that changed
	// files outside the state: the files cannot be put back to a point
	// before it.
	Lost uint64 `json:"lost,omitempty"`
}

// HistoryCommit is one commit of a session.
type HistoryCommit struct {
	Seq    uint64    `json:"seq"`
	CallID string    `json:"call_id"`
	Tool   string    `json:"tool"`
	Time   time.Time `json:"time"`
	// Prev and Root are the roots of the state before and after
	// (statetree.State.Root). A record in the history's tail leaves them
	// out where the tail's documents name them.
	Prev string `json:"prev,omitempty"`
	Root string `json:"root,omitempty"`
	// State names the STATE slices the commit changed. A commit does
	// not store them: Log finds them from Prev and Root (records stored
	// by builds of format 3 and before hold them, and keep them).
	State []string      `json:"state,omitempty"`
	Files []HistoryFile `json:"files,omitempty"`
	// Restores marks an undo or a restore, which undo skips; Undone a
	// call that one of those undid.
	Restores bool `json:"restores,omitempty"`
	Undone   bool `json:"undone,omitempty"`
}

// HistoryFile is a file a commit changed, or with Dir a directory it made
// or removed. One outside the stored state has what was there before and
// after: a file's content as statetree.PutFile stores it (its hash and
// size), "dir" for a directory, "" for nothing.
type HistoryFile struct {
	Path       string `json:"path"`
	Dir        bool   `json:"dir,omitempty"`
	Outside    bool   `json:"outside,omitempty"`
	Before     string `json:"before,omitempty"`
	BeforeSize int64  `json:"before_size,omitempty"`
	After      string `json:"after,omitempty"`
	AfterSize  int64  `json:"after_size,omitempty"`
}

// Checkpoint names the state after commit Seq (0: the session's start).
type Checkpoint struct {
	Name string    `json:"name"`
	Seq  uint64    `json:"seq"`
	Root string    `json:"root"`
	Time time.Time `json:"time"`
}

type historyKey struct{}

// WithHistory returns ctx carrying h, the history of the session of the
// call or read ctx is for.
func WithHistory(ctx context.Context, h History) context.Context {
	return context.WithValue(ctx, historyKey{}, h)
}

// HistoryFrom returns the history ctx carries, or nil when the server
// keeps none of its session.
func HistoryFrom(ctx context.Context) History {
	h, _ := ctx.Value(historyKey{}).(History)
	return h
}
