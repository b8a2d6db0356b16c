package hooks

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecord appends rec as one line of JSON, the encoding json.Marshal
// gives it (fields in the same order, the same omissions), written by hand
// because it is on every call's path. value is the encoding of rec.Value.
func appendRecord(b []byte, rec *AuditRecord, value []byte) []byte {
	b = append(b, `{"time":`...)
	b = appendTime(b, rec.Time)
	b = append(b, `,"session":`...)
	b = appendString(b, rec.Session)
	if rec.Subject != "" {
		b = append(b, `,"subject":`...)
		b = appendString(b, rec.Subject)
	}
	if len(rec.Scopes) > 0 {
		b = append(b, `,"scopes":[`...)
		for i, s := range rec.Scopes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, `,"call_id":`...)
	b = appendString(b, rec.CallID)
	b = append(b, `,"tool":`...)
	b = appendString(b, rec.Tool)
	b = append(b, `,"arguments":`...)
	b = appendRaw(b, rec.Args)
	b = append(b, `,"success":`...)
	b = strconv.AppendBool(b, rec.Success)
	b = append(b, `,"message":`...)
	b = appendString(b, rec.Message)
	b = append(b, `,"text":`...)
	b = appendString(b, rec.Text)
	if rec.Value != nil {
		b = append(b, `,"value":`...)
		b = append(b, value...)
	}
	b = append(b, `,"started":`...)
	b = appendTime(b, rec.Started)
	b = append(b, `,"duration_ns":`...)
	b = strconv.AppendInt(b, int64(rec.Duration), 10)
	if rec.ErrorClass != "" {
		b = append(b, `,"error_class":`...)
		b = appendString(b, rec.ErrorClass)
	}
	if rec.Cached {
		b = append(b, `,"cached":true`...)
	}
	if rec.Retries != 0 {
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(rec.Retries), 10)
	}
	if rec.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, rec.Error)
	}
	return append(b, '}')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendRaw appends a JSON document compacted onto one line, or, when it is
// not JSON, as a string; null when empty.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return appendString(b, string(raw))
	}
	return buf.Bytes()
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// without HTML escaping: quotes, backslashes and control characters,
// invalid UTF-8 as U+FFFD, and U+2028 and U+2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
