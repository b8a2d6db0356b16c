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
// one of lits. With fold, lits are lower case ASCII and are found in the
// text lowered by lowerASCII; a case-insensitive literal gives only
// pieces free of the letters that fold to a rune outside ASCII (k to the
// Kelvin sign, s to the long s), so lowering ASCII alone finds them.
type prefilter struct {
	lits [][]byte
	fold bool
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
		p.fold = p.fold || l.fold
	}
	for _, l := range set {
		b := []byte(l.s)
		if p.fold {
			lowerASCII(b, b)
		}
		p.lits = append(p.lits, b)
	}
	return p
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

// lowerASCII writes src to dst (of at least its length) with ASCII upper
// case letters lowered, every other byte as it is.
func lowerASCII(dst, src []byte) {
	for i, c := range src {
		dst[i] = lowerByte(c)
	}
}

// literalScan finds, one after another, the places in a text where one of
// a prefilter's literals starts. It remembers each literal's next place,
// so that a literal found far ahead is not searched for again.
type literalScan struct {
	p    *prefilter
	text []byte // the text, lowered when the prefilter folds
	next []int  // per literal: its next place at or after the last from, -1 for none, -2 unknown
}

func (s *literalScan) reset(p *prefilter, text []byte) {
	s.p, s.text = p, text
	s.next = s.next[:0]
	for range p.lits {
		s.next = append(s.next, -2)
	}
}

// index returns the first place at or after from where a literal starts,
// -1 when there is none.
func (s *literalScan) index(from int) int {
	best := -1
	for i, l := range s.p.lits {
		n := s.next[i]
		if n == -2 || n >= 0 && n < from {
			n = -1
			if from <= len(s.text) {
				if k := bytes.Index(s.text[from:], l); k >= 0 {
					n = from + k
				}
			}
			s.next[i] = n
		}
		if n >= 0 && (best < 0 || n < best) {
			best = n
		}
	}
	return best
}
