package sessions

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/store"
)

// ErrUnknownSession is the error for a handle that names no session the
// caller may use: malformed, never minted, expired, ended or bound to
// another principal alike, so that the answer tells nothing about which.
// The client reads UnknownSessionMessage.
var ErrUnknownSession = errors.New("unknown session")

// ErrNoSession is the error for a request that reads session state and
// names no session, on a connection that has none (a 2026-07-28 request
// over HTTP). The client reads NoSessionMessage.
var ErrNoSession = errors.New("no session")

// ErrTooManySessions is the error for a request that would start a
// session when its principal already holds Options.MaxPerOwner in this
// process. The client reads TooManySessionsMessage.
var ErrTooManySessions = errors.New("too many sessions")

// ErrChanged is the error of a commit that found the session's head moved
// since this process loaded it; the client reads ChangedMessage.
var ErrChanged = errors.New("session changed elsewhere")

// ErrStale is the error of a call that found, before it ran, that another
// process had changed its session since this one loaded it (Use.Fresh):
// the call may run again on the latest revision, whatever its tool does.
var ErrStale = fmt.Errorf("%w before the call ran", ErrChanged)

// StoreError is the error of a commit that the store failed; the client
// reads it.
type StoreError struct{ Err error }

func (e StoreError) Error() string { return StoreDownMessage + e.Err.Error() }
func (e StoreError) Unwrap() error { return e.Err }

// What the client reads for the errors above.
const (
	UnknownSessionMessage  = "Unknown session; start a new one by calling without 'session'."
	NoSessionMessage       = "No session to read: pass 'session' with the handle from the 'Session:' line of an earlier result, or start a session with a call that changes state."
	TooManySessionsMessage = "Too many sessions: this client holds as many as the server allows. Continue one by passing 'session' with the handle from the 'Session:' line of an earlier result, or end one; an idle session ends by itself after the session TTL."
	ChangedMessage         = "The session changed elsewhere; call again."
	StoreDownMessage       = "Session store unavailable; call again. "
)

// NewSessionMessage follows the error of a call that failed for want of
// what (a plan, a file) in a session started for it: its client named no
// session, and has no connection whose session it could use (a 2026-07-28
// client over HTTP that did not pass the handle back). The session is not
// kept (the call failed in it), so its handle is not shown.
func NewSessionMessage(what string) string {
	return "This call named no session, so it ran in a new one, which has no " + what +
		". To continue the session of an earlier call, pass the handle from the line 'Session: s_…' of its result as `session`."
}

// Message returns what the client reads when finding its session failed
// with err, or "" for a failure of the server's own.
func Message(err error) string {
	switch {
	case errors.Is(err, ErrUnknownSession):
		return UnknownSessionMessage
	case errors.Is(err, ErrNoSession):
		return NoSessionMessage
	case errors.Is(err, ErrTooManySessions):
		return TooManySessionsMessage
	}
	return ""
}

// validHandle reports whether h has the shape of a handle: a name the
// store accepts (1 to 128 letters, digits, '-' and '_') that starts with a
// letter or digit. The server mints "s_" and 26 base32 characters; a
// process may name any such handle (CheckName).
func validHandle(h string) bool {
	return store.ValidSession(h) && h[0] != '-' && h[0] != '_'
}

// newHandle returns a fresh handle: "s_" and 26 base32 characters, 130 bits
// from crypto/rand.
func newHandle() string { return "s_" + rand.Text() }

// CheckName reports whether name may name a session (the --session flag):
// 1 to 128 letters, digits, '-' or '_', the first a letter or digit. Every
// handle the server mints has that shape.
func CheckName(name string) error {
	if !validHandle(name) {
		return fmt.Errorf("%q is not a session name: use 1 to 128 letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	return nil
}
