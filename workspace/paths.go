package workspace

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path limits. Errors that enforce them name the limit.
const (
	// MaxSegments is the most segments a path may have.
	MaxSegments = 16
	// MaxSegmentBytes is the longest a segment may be, in bytes.
	MaxSegmentBytes = 255
)

// PathError is a path the workspace refuses; its text is the message the
// model reads.
type PathError struct{ Msg string }

func (e *PathError) Error() string { return e.Msg }

func pathErrorf(format string, args ...any) error {
	return &PathError{Msg: fmt.Sprintf(format, args...)}
}

// Normalize returns the canonical form of a path in the workspace:
// relative to the root, slash-separated, without empty segments. A leading
// "/" is ignored, repeated slashes collapse, surrounding whitespace is
// trimmed; "", "/" and "." are the root, returned as "". A "." or ".."
// segment, a NUL byte, a control character, bytes that are not UTF-8, a
// segment that starts or ends with whitespace, more than MaxSegments
// segments or a segment longer than MaxSegmentBytes is an error (a
// *PathError). Normalising a normalised path changes nothing.
func Normalize(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", pathErrorf("Path must be valid UTF-8.")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", pathErrorf("Path must not contain NUL bytes.")
	}
	p = strings.TrimSpace(p)
	if p == "." {
		return "", nil
	}
	var b strings.Builder
	n := 0
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			continue
		}
		if seg == "." || seg == ".." {
			return "", pathErrorf("Path segments may not include '.' or '..'.")
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return "", pathErrorf("Path must not contain control characters.")
			}
		}
		if edgeSpace(seg) {
			return "", pathErrorf("Path segment %q starts or ends with whitespace.", abbreviate(seg))
		}
		if len(seg) > MaxSegmentBytes {
			return "", pathErrorf("Path segment %q is %d bytes; the limit is %d bytes per segment.", abbreviate(seg), len(seg), MaxSegmentBytes)
		}
		n++
		if n > MaxSegments {
			return "", pathErrorf("Path has more than %d segments; the limit is %d.", MaxSegments, MaxSegments)
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(seg)
	}
	return b.String(), nil
}

// edgeSpace reports whether a segment starts or ends with whitespace, which
// Normalize refuses so that trimming a whole path never changes a segment.
func edgeSpace(seg string) bool {
	first, _ := utf8.DecodeRuneInString(seg)
	last, _ := utf8.DecodeLastRuneInString(seg)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}

// normalizeFile is Normalize for a path that must name a file: the root is
// refused.
func normalizeFile(p string) (string, error) {
	n, err := Normalize(p)
	if err != nil {
		return "", err
	}
	if n == "" {
		return "", pathErrorf("A file path is required; %q names the workspace root.", strings.TrimSpace(p))
	}
	return n, nil
}

// display is how a normalised path appears in messages: the root is "/".
func display(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func abbreviate(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// parent returns the directory holding p ("" for a top-level path).
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// base returns the last segment of p.
func base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// join joins a directory and a relative path.
func join(dir, rel string) string {
	switch {
	case dir == "":
		return rel
	case rel == "":
		return dir
	}
	return dir + "/" + rel
}

// ancestors returns the directories above p, outermost first, not counting
// the root.
func ancestors(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// comparePaths orders paths segment by segment, so that a directory's
// contents come right after it and before its next sibling ("a", "a/b",
// "a-b"): '/' sorts before every other byte. Both backends list and walk in
// this order.
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
