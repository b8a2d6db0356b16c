package workspace

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
)

// matcher finds the matching lines of a file's content for grep: the
// compiled pattern, its prefilter, and how the matches are shown.
type matcher struct {
	re        *regexp.Regexp
	pre       *prefilter // nil: every line is a candidate
	exact     bool       // the pattern is its prefilter's one literal: a line holding it matches
	multiline bool
	before    int // context lines before each match
	after     int // and after
}

// newMatcher compiles pattern as grep runs it: per line, or over the whole
// content with multiline (where . matches a newline, and ^ and $ match at
// line ends too); case-insensitive with fold.
func newMatcher(pattern string, fold, multiline bool) (*matcher, error) {
	flags := ""
	if fold {
		flags += "i"
	}
	if multiline {
		flags += "ms"
	}
	expr := pattern
	if flags != "" {
		expr = "(?" + flags + ")(?:" + pattern + ")"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		// The error of the pattern as the caller wrote it.
		if _, perr := regexp.Compile(pattern); perr != nil {
			err = perr
		}
		return nil, err
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	parsed = parsed.Simplify()
	m := &matcher{re: re, pre: newPrefilter(parsed), multiline: multiline}
	m.exact = !multiline && m.pre != nil && len(m.pre.needles) == 1 && !m.pre.needles[0].fold &&
		parsed.Op == syntax.OpLiteral && parsed.Flags&syntax.FoldCase == 0 && !bytes.ContainsRune(m.pre.needles[0].lit, '\n')
	return m, nil
}

// hit is one match: the lines (from 1) it spans, and the offsets in the
// content of the first line's start and of the match itself.
type hit struct {
	first, last int
	lineStart   int
	start, end  int
}

// scanState is a worker's reusable state: the buffer a file is read
// into, the literal scan, and the hits of the file being scanned.
type scanState struct {
	buf  []byte
	lits literalScan
	hits []hit
}

// maxKeptBuffer is the largest read buffer a worker keeps between files;
// a larger one, for a large file, is let go once it is searched.
const maxKeptBuffer = 1 << 20

// release lets go of a buffer grown past maxKeptBuffer.
func (st *scanState) release() {
	if cap(st.buf) > maxKeptBuffer {
		st.buf = nil
	}
}

// find calls fn for each match in data, in order, until fn returns
// false. Without multiline, a match is a line the pattern matches
// (without its newline); with it, each match of the pattern over the
// whole content.
func (m *matcher) find(st *scanState, data []byte, fn func(hit) bool) {
	if m.pre != nil {
		st.lits.reset(m.pre, data)
		if st.lits.index(0) < 0 {
			return
		}
	}
	if m.multiline {
		m.findMultiline(data, fn)
		return
	}
	line, lineStart := 1, 0 // the line number of the offset lineStart
	for pos := 0; pos < len(data); {
		start, at := pos, 0
		if m.pre != nil {
			at = st.lits.index(pos)
			if at < 0 {
				return
			}
			start = bytes.LastIndexByte(data[pos:at], '\n') + pos + 1
		}
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start
		}
		var loc []int
		if m.exact {
			loc = []int{at - start, at - start + len(m.pre.needles[0].lit)}
		} else {
			loc = m.re.FindIndex(data[start:end])
		}
		if loc != nil {
			line += bytes.Count(data[lineStart:start], newline)
			lineStart = start
			if !fn(hit{first: line, last: line, lineStart: start, start: start + loc[0], end: start + loc[1]}) {
				return
			}
		}
		pos = end + 1
	}
}

var newline = []byte{'\n'}

func (m *matcher) findMultiline(data []byte, fn func(hit) bool) {
	line, lineStart := 1, 0
	for pos := 0; pos <= len(data); {
		loc := m.re.FindIndex(data[pos:])
		if loc == nil {
			return
		}
		start, end := pos+loc[0], pos+loc[1]
		ls := bytes.LastIndexByte(data[:start], '\n') + 1
		line += bytes.Count(data[lineStart:ls], newline)
		lineStart = ls
		last := line
		if end > start {
			last += bytes.Count(data[start:end-1], newline)
		}
		if !fn(hit{first: line, last: last, lineStart: ls, start: start, end: end}) {
			return
		}
		pos = end
		if end == start {
			// An empty match: go on from the next line, as a line has
			// one match at most.
			next := bytes.IndexByte(data[end:], '\n')
			if next < 0 {
				return
			}
			pos = end + next + 1
		}
	}
}

// fileScan is what grep found in one file: how many matches, and the
// groups of lines to show (matches and their context) as far as one page
// may hold them.
type fileScan struct {
	skipped bool // unreadable, too large or binary
	matches int
	groups  []group
	// more is the first line of the first match past the groups kept;
	// 0 when they hold every match.
	more int
}

// group is a run of lines shown together: matches and their context.
type group struct {
	first int     // the line of its first match
	lines []Match // in order
	bytes int     // how much of a page it takes
}

// scanKind says what scanFile does with the matches it finds.
type scanKind int

const (
	scanShow  scanKind = iota // keep the groups to show
	scanCount                 // count them
	scanAny                   // stop at the first
)

// scanFile finds the matches of data. With scanShow it keeps the groups
// to show from the line from on (the matches before it are counted, not
// shown), at most keep matches, and groups of about budget bytes (0: no
// limit).
func (m *matcher) scanFile(st *scanState, path string, data []byte, kind scanKind, from, keep, budget int) fileScan {
	var out fileScan
	st.hits = st.hits[:0]
	capped := false
	count := kind != scanShow
	m.find(st, data, func(h hit) bool {
		out.matches++
		if kind == scanAny {
			return false
		}
		if count || h.first < from {
			return true
		}
		switch {
		case capped:
		case len(st.hits) == keep:
			capped = true
			out.more = h.first
		default:
			st.hits = append(st.hits, h)
		}
		return true
	})
	if count || len(st.hits) == 0 {
		return out
	}
	size := 0
	for i := 0; i < len(st.hits); {
		// A group: hits whose context touches or overlaps.
		j := i + 1
		for m.before+m.after > 0 && j < len(st.hits) && st.hits[j].first-m.before <= st.hits[j-1].last+m.after+1 {
			j++
		}
		if capped && j == len(st.hits) && m.before+m.after > 0 && i > 0 {
			// Its end may join hits not kept: it starts the next page.
			out.more = st.hits[i].first
			break
		}
		stop := math.MaxInt // a capped group stops before the first hit not kept
		if capped && j == len(st.hits) {
			stop = out.more
		}
		g := m.group(path, data, st.hits[i:j], stop)
		out.groups = append(out.groups, g)
		if size += g.bytes; budget > 0 && size > budget {
			if j < len(st.hits) {
				out.more = st.hits[j].first
			}
			break
		}
		i = j
	}
	return out
}

// group returns the lines of the hits hs, which make one group, with
// their context, before the line stop.
func (m *matcher) group(path string, data []byte, hs []hit, stop int) group {
	g := group{first: hs[0].first}
	// Walk back from the first hit to the first context line.
	start, line := hs[0].lineStart, hs[0].first
	for k := 0; k < m.before && start > 0; k++ {
		start = bytes.LastIndexByte(data[:start-1], '\n') + 1
		line--
	}
	lastLine := min(hs[len(hs)-1].last+m.after, stop-1)
	h := 0
	for pos := start; line <= lastLine && pos <= len(data); line++ {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += pos
		}
		if pos == len(data) && line > hs[len(hs)-1].last {
			break // past the last line
		}
		for h < len(hs) && hs[h].last < line {
			h++
		}
		isMatch := h < len(hs) && hs[h].first <= line
		text := data[pos:end]
		var shown string
		if isMatch {
			// The window around the match, where the match is on this line.
			at := max(hs[h].start-pos, 0)
			if at > len(text) {
				at = 0
			}
			shown = window(text, at)
		} else {
			shown = window(text, 0)
		}
		g.lines = append(g.lines, Match{Path: path, Line: line, Text: shown, Context: !isMatch})
		g.bytes += len(path) + len(shown) + 16
		if end == len(data) {
			break
		}
		pos = end + 1
	}
	return g
}

// window returns the line as grep shows it: whole when it is at most
// MaxLineBytes long, otherwise the MaxLineBytes around the offset at (a
// quarter of them before it), cut at rune boundaries and marked.
func window(line []byte, at int) string {
	if len(line) <= MaxLineBytes {
		return string(line)
	}
	start := max(0, min(at-MaxLineBytes/4, len(line)-MaxLineBytes))
	for start > 0 && !isRuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+MaxLineBytes)
	for end < len(line) && !isRuneStart(line[end]) {
		end--
	}
	s := string(line[start:end])
	if start > 0 {
		s = fmt.Sprintf("[... %d bytes before] ", start) + s
	}
	if end < len(line) {
		s += fmt.Sprintf(" [... %d more bytes]", len(line)-end)
	}
	return s
}
