package session

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// LogID returns the identifier by which logs, audit records and traces
// name the session whose handle (or ID) is h: "sid_" and the first 12
// hexadecimal digits of the SHA-256 of h, "" for "". A handle is a
// credential (over HTTP without authentication it is all it takes to act
// in its session), so it is never logged; its LogID tells one session's
// records from another's, in every process and replica that serves it,
// and cannot be used in its place: a hash cannot be turned back into the
// 130 random bits of a minted handle.
func LogID(h string) string {
	if h == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(h))
	return "sid_" + hex.EncodeToString(sum[:6])
}

// LogHandle is a handle as the value of a log attribute: it is logged as
// its LogID, computed only when a record is.
type LogHandle string

// LogValue returns the handle's LogID.
func (h LogHandle) LogValue() slog.Value { return slog.StringValue(LogID(string(h))) }
