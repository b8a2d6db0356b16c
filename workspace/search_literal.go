package workspace

import (
	"bytes"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// maxLiterals is the most alternatives a prefilter searches for: a
// pattern whose matches need one of more (a long alternation) runs its
// regular expression on every line.
const maxLiterals = 8

// prefilter finds where a match of a pattern may be: every match contains
// one of its literals. A case-insensitive literal gives only pieces free
// of the letters that fold to a rune outside ASCII (k to the Kelvin sign,
// s to the long s), so that comparing ASCII without case finds it in
// every case.
type prefilter struct {
	needles []needle
}

// newPrefilter returns the prefilter of the parsed pattern re, or nil
// when no literal is required (then every line is a candidate).
func newPrefilter(re *syntax.Regexp) *prefilter {
	set := required(re)
	if len(set) == 0 {
		return nil
	}
	p := &prefilter{}
	for _, l := range set {
		p.needles = append(p.needles, newNeedle(l))
	}
	return p
}

// needle is a literal to find, by its rarest byte: a search runs the
// fast byte search for that byte (in either case when fold), and compares
// the literal around each place it is found.
type needle struct {
	lit    []byte // lower case when fold
	fold   bool
	rare   int  // the offset in lit of its rarest byte
	c1, c2 byte // that byte, and its upper case when fold (else c1 again)
}

func newNeedle(l lit) needle {
	n := needle{lit: []byte(l.s), fold: l.fold}
	for i, c := range n.lit {
		if byteRank(c, n.fold) < byteRank(n.lit[n.rare], n.fold) {
			n.rare = i
		}
	}
	n.c1, n.c2 = n.lit[n.rare], n.lit[n.rare]
	if n.fold {
		n.c2 = upperByte(n.c1)
	}
	return n
}

// index returns the first place at or after from where the needle starts
// in text, -1 for none.
func (n *needle) index(text []byte, from int) int {
	next1, next2 := -2, -2 // the next place of c1 and of c2; -2 to find
	if n.c2 == n.c1 {
		next2 = -1
	}
	find := func(c byte, next, pos int) int {
		if next == -1 || next >= pos {
			return next
		}
		if i := bytes.IndexByte(text[pos:], c); i >= 0 {
			return pos + i
		}
		return -1
	}
	for pos := from + n.rare; pos < len(text); {
		next1, next2 = find(n.c1, next1, pos), find(n.c2, next2, pos)
		at := next1
		if at < 0 || next2 >= 0 && next2 < at {
			at = next2
		}
		if at < 0 {
			return -1
		}
		start := at - n.rare
		if start+len(n.lit) <= len(text) && n.equal(text[start:start+len(n.lit)]) {
			return start
		}
		pos = at + 1
	}
	return -1
}

// equal reports whether b is the needle's literal (in any ASCII case when
// fold).
func (n *needle) equal(b []byte) bool {
	if !n.fold {
		return bytes.Equal(b, n.lit)
	}
	for i, c := range b {
		if lowerByte(c) != n.lit[i] {
			return false
		}
	}
	return true
}

// byteRank ranks how often the byte c appears in source code and text:
// higher is more often (with fold, in either case).
func byteRank(c byte, fold bool) int {
	r := commonRank[c]
	if fold {
		r = max(r, commonRank[upperByte(c)], commonRank[lowerByte(c)])
	}
	return r
}

// commonBytes are the bytes most common in source code and prose, most
// common last; the rest count as rare.
const commonBytes = "QZXJ<>KVBGUYWPMF[]$+0\"#'*-HDCNLIROASETkxvzqjby:{}w,g\n1=p_/fm.()c\tulhdrnsoiate "

var commonRank = func() (t [256]int) {
	for i := range len(commonBytes) {
		t[commonBytes[i]] = i + 1
	}
	return t
}()

func upperByte(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// lit is a literal a match must contain; fold says that it may appear in
// any case (it is then lower case ASCII).
type lit struct {
	s    string
	fold bool
}

// required returns literals one of which every match of re contains,
// nil when it finds none. It is sound, not complete: it gives up on what
// it does not understand.
func required(re *syntax.Regexp) []lit {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return []lit{{s: string(re.Rune)}}
		}
		if s := foldPiece(re.Rune); s != "" {
			return []lit{{s: s, fold: true}}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		return requiredConcat(re.Sub)
	case syntax.OpAlternate:
		var out []lit
		for _, sub := range re.Sub {
			set := required(sub)
			if len(set) == 0 || len(out)+len(set) > maxLiterals {
				return nil
			}
			out = append(out, set...)
		}
		return out
	}
	return nil
}

// requiredConcat returns the best literals of a concatenation: of its
// parts, and of each run of adjacent literals of the same case folding
// taken as one.
func requiredConcat(subs []*syntax.Regexp) []lit {
	var best []lit
	consider := func(set []lit) {
		if better(set, best) {
			best = set
		}
	}
	for i := 0; i < len(subs); {
		if subs[i].Op != syntax.OpLiteral {
			consider(required(subs[i]))
			i++
			continue
		}
		run := &syntax.Regexp{Op: syntax.OpLiteral, Flags: subs[i].Flags & syntax.FoldCase}
		j := i
		for ; j < len(subs) && subs[j].Op == syntax.OpLiteral && subs[j].Flags&syntax.FoldCase == run.Flags; j++ {
			run.Rune = append(run.Rune, subs[j].Rune...)
		}
		consider(required(run))
		i = j
	}
	return best
}

// better reports whether the literal set a narrows more than b: its
// shortest literal is longer, or as long with fewer alternatives.
func better(a, b []lit) bool {
	if len(a) == 0 {
		return false
	}
	if len(b) == 0 {
		return true
	}
	ma, mb := shortest(a), shortest(b)
	return ma > mb || ma == mb && len(a) < len(b)
}

func shortest(set []lit) int {
	n := len(set[0].s)
	for _, l := range set[1:] {
		n = min(n, len(l.s))
	}
	return n
}

// foldPiece returns the longest run of runes of the case-insensitive
// literal rs that lowering ASCII finds in every case: ASCII runes whose
// case folds stay within ASCII, lowered.
func foldPiece(rs []rune) string {
	best, cur := "", []byte{}
	for _, r := range append(rs, utf8.RuneError) {
		if r < utf8.RuneSelf && asciiFold[r] {
			cur = append(cur, lowerByte(byte(r)))
			continue
		}
		if len(cur) > len(best) {
			best = string(cur)
		}
		cur = cur[:0]
	}
	return best
}

// asciiFold says, for each ASCII rune, whether every rune it folds to
// under Unicode simple case folding (as (?i) matches) is ASCII too.
var asciiFold = func() (t [utf8.RuneSelf]bool) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = true
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				t[r] = false
			}
		}
	}
	return t
}()

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// literalScan finds, one after another, the places in a text where one of
// a prefilter's literals starts. It remembers each literal's next place,
// so that a literal found far ahead is not searched for again.
type literalScan struct {
	p    *prefilter
	text []byte
	next []int // per literal: its next place at or after the last from, -1 for none, -2 unknown
}

func (s *literalScan) reset(p *prefilter, text []byte) {
	s.p, s.text = p, text
	s.next = s.next[:0]
	for range p.needles {
		s.next = append(s.next, -2)
	}
}

// index returns the first place at or after from where a literal starts,
// -1 when there is none.
func (s *literalScan) index(from int) int {
	best := -1
	for i := range s.p.needles {
		n := s.next[i]
		if n == -2 || n >= 0 && n < from {
			n = s.p.needles[i].index(s.text, from)
			s.next[i] = n
		}
		if n >= 0 && (best < 0 || n < best) {
			best = n
		}
	}
	return best
}
