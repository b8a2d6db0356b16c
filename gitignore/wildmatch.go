package gitignore

import "strings"

// Results of wild, as git's wildmatch has them: besides a match and a
// mismatch, two ways for a recursive call to say that no later position
// of the caller's star can match either.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// Wildmatch reports whether text matches the pattern as git's wildmatch
// does with WM_PATHNAME, the way .gitignore patterns are matched: * and ?
// match anything but a slash, a ** between slashes (or at either end)
// matches any number of directories, [...] is a set of bytes ([!...] and
// [^...] its complement, with ranges and [:class:] names), and a
// backslash makes the next byte literal. Matching is by bytes.
func Wildmatch(pattern, text string) bool {
	return wild(pattern, text) == wmMatch
}

// isGlobSpecial reports whether c is one of the bytes wildmatch treats
// specially.
func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// wild is git's dowild, byte for byte.
func wild(p, text string) int {
	at := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		tch := at(text, ti)
		if ti >= len(text) && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			// The next byte literally; a trailing backslash matches
			// nothing.
			pi++
			if pi >= len(p) || tch != p[pi] {
				return wmNoMatch
			}
		case '?':
			if tch == '/' {
				return wmNoMatch
			}
		case '*':
			matchSlash := false
			pi++
			if at(p, pi) == '*' {
				prev := pi - 2
				for at(p, pi) == '*' {
					pi++
				}
				if (prev < 0 || p[prev] == '/') &&
					(pi == len(p) || p[pi] == '/' || p[pi] == '\\' && at(p, pi+1) == '/') {
					// A ** that is a whole component: try it as no
					// directory at all first, then as any number.
					if at(p, pi) == '/' && wild(p[pi+1:], text[ti:]) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				}
			}
			if pi == len(p) {
				// A trailing ** matches everything; a trailing * only
				// what has no more slashes.
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				// One star, then a slash: the rest of this component.
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti += slash
				continue // the loop steps over both slashes
			}
			for ti < len(text) {
				tch = text[ti]
				if !isGlobSpecial(p[pi]) {
					// A literal follows the star: skip to its next
					// occurrence (within this component unless **).
					c := p[pi]
					for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != c {
						ti++
					}
					if at(text, ti) != c {
						return wmNoMatch
					}
					tch = c
				}
				if m := wild(p[pi:], text[ti:]); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			pch = at(p, pi)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				pi++
				pch = at(p, pi)
			}
			var prev byte
			matched := false
			for {
				switch {
				case pch == 0:
					return wmAbortAll
				case pch == '\\':
					pi++
					pch = at(p, pi)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				case pch == '-' && prev != 0 && at(p, pi+1) != 0 && at(p, pi+1) != ']':
					pi++
					pch = p[pi]
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prev {
						matched = true
					}
					pch = 0 // so that prev becomes 0: no range from here
				case pch == '[' && at(p, pi+1) == ':':
					s := pi + 2
					pi = s
					for at(p, pi) != 0 && p[pi] != ']' {
						pi++
					}
					if at(p, pi) == 0 {
						return wmAbortAll
					}
					if pi-s-1 < 0 || p[pi-1] != ':' {
						// No ":]": a plain '[' in the set.
						pi = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
						break
					}
					ok, known := inClass(p[s:pi-1], tch)
					if !known {
						return wmAbortAll
					}
					matched = matched || ok
					pch = 0
				case tch == pch:
					matched = true
				}
				prev = pch
				pi++
				if pch = at(p, pi); pch == ']' {
					break
				}
			}
			if matched == negated || tch == '/' {
				return wmNoMatch
			}
		default:
			if tch != pch {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// inClass reports whether c is in the character class named name (as
// [:name:] gives it, ASCII only) and whether the name is one git knows.
func inClass(name string, c byte) (in, known bool) {
	upper := 'A' <= c && c <= 'Z'
	lower := 'a' <= c && c <= 'z'
	digit := '0' <= c && c <= '9'
	switch name {
	case "alnum":
		return upper || lower || digit, true
	case "alpha":
		return upper || lower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return 0x21 <= c && c <= 0x7e, true
	case "lower":
		return lower, true
	case "print":
		return 0x20 <= c && c <= 0x7e, true
	case "punct":
		return 0x21 <= c && c <= 0x7e && !upper && !lower && !digit, true
	case "space":
		return c == ' ' || '\t' <= c && c <= '\r', true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F', true
	}
	return false, false
}
