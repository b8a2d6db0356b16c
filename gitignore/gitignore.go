// Package gitignore matches paths against the patterns of a .gitignore
// file as git does: the last pattern that matches decides, ! negates, a
// trailing slash matches directories only, a pattern without a slash
// (but a trailing one) matches the last component at any depth, one with
// a slash matches the path from the file's directory, with wildmatch's *,
// ?, [...] and **.
//
// A List answers for one path at a time, at its own name only: a caller
// walking a tree does not enter an ignored directory, so it never needs
// to test a path's ancestors (git's rule that a file in an excluded
// directory cannot be re-included follows). The cost of a test is that of
// the patterns that can match the last component: those naming it
// literally are found in a map, the rest are tried from the last.
package gitignore

import (
	"bytes"
	"strings"
)

// A List is the compiled patterns of one .gitignore file.
type List struct {
	patterns []pattern
	// byName holds the indexes, increasing, of the patterns without
	// wildcards, by their last component.
	byName map[string][]int32
	// wild holds the indexes, increasing, of the other patterns.
	wild []int32
}

// pattern is one compiled line.
type pattern struct {
	// text is the pattern for wildmatch: without '!', without the
	// trailing slash, and without the leading slash of an anchored one.
	text    string
	negate  bool
	dirOnly bool
	// base says that the pattern has no slash: it matches the last
	// component of a path at any depth.
	base bool
	// literal says that text has no wildcards; suffix, that it is a star
	// followed by a literal (text[1:]).
	literal, suffix bool
}

// Parse compiles the content of a .gitignore file. Blank lines and
// comments are skipped, trailing spaces dropped unless escaped with a
// backslash, a byte order mark at the start and a carriage return at the
// end of a line ignored.
func Parse(data []byte) *List {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	l := &List{}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if p, ok := compile(trimTrailingSpaces(string(line))); ok {
			l.add(p)
		}
	}
	return l
}

// trimTrailingSpaces drops the spaces at the end of a line that no
// backslash escapes, as git does.
func trimTrailingSpaces(s string) string {
	last := -1 // where the run of unescaped spaces at the end starts
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if last < 0 {
				last = i
			}
			continue
		case '\\':
			if i++; i == len(s) {
				return s
			}
		}
		last = -1
	}
	if last >= 0 {
		return s[:last]
	}
	return s
}

// compile parses one line; ok is false when nothing is left to match.
func compile(s string) (p pattern, ok bool) {
	if strings.HasPrefix(s, "!") {
		p.negate, s = true, s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.dirOnly, s = true, s[:len(s)-1]
	}
	p.base = !strings.Contains(s, "/")
	if !p.base {
		s = strings.TrimPrefix(s, "/")
	}
	if s == "" {
		return p, false
	}
	p.text = s
	p.literal = !strings.ContainsAny(s, `*?[\`)
	p.suffix = p.base && s[0] == '*' && !strings.ContainsAny(s[1:], `*?[\`)
	return p, true
}

// add appends p to the list, indexed.
func (l *List) add(p pattern) {
	i := int32(len(l.patterns))
	l.patterns = append(l.patterns, p)
	if !p.literal {
		l.wild = append(l.wild, i)
		return
	}
	if l.byName == nil {
		l.byName = map[string][]int32{}
	}
	name := p.text[strings.LastIndexByte(p.text, '/')+1:]
	l.byName[name] = append(l.byName[name], i)
}

// Len returns the number of patterns.
func (l *List) Len() int { return len(l.patterns) }

// Match tests the path rel, relative to the directory of the .gitignore
// file (slash-separated, without a leading slash), at its own name; dir
// says whether it is a directory. matched says whether a pattern matched,
// and ignored what the last one that did says.
func (l *List) Match(rel string, dir bool) (ignored, matched bool) {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	best := int32(-1)
	if ix := l.byName[name]; len(ix) > 0 {
		for k := len(ix) - 1; k >= 0; k-- {
			if l.patterns[ix[k]].matches(rel, name, dir) {
				best = ix[k]
				break
			}
		}
	}
	for k := len(l.wild) - 1; k >= 0 && l.wild[k] > best; k-- {
		if l.patterns[l.wild[k]].matches(rel, name, dir) {
			best = l.wild[k]
			break
		}
	}
	if best < 0 {
		return false, false
	}
	return !l.patterns[best].negate, true
}

// matches reports whether p matches the path rel, whose last component
// is name.
func (p *pattern) matches(rel, name string, dir bool) bool {
	switch {
	case p.dirOnly && !dir:
		return false
	case p.base && p.literal:
		return name == p.text
	case p.base && p.suffix:
		return strings.HasSuffix(name, p.text[1:])
	case p.base:
		return Wildmatch(p.text, name)
	case p.literal:
		return rel == p.text
	}
	return Wildmatch(p.text, rel)
}
