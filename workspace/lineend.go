package workspace

import "strings"

// bom is the UTF-8 byte order mark, which a text file may start with.
const bom = "\uFEFF"

// lineEnds is how the lines of a text end.
type lineEnds int

const (
	// endsLF: no line ends in "\r\n" (or the text has no line end).
	endsLF lineEnds = iota
	// endsCRLF: every line end is "\r\n", and there is at least one.
	endsCRLF
	// endsMixed: some lines end in "\r\n", others in "\n" alone.
	endsMixed
)

// lineEndsOf tells how the lines of text end.
func lineEndsOf(text string) lineEnds {
	crlf := strings.Count(text, "\r\n")
	switch {
	case crlf == 0:
		return endsLF
	case crlf == strings.Count(text, "\n"):
		return endsCRLF
	}
	return endsMixed
}

// toCRLF writes each "\n" of s that does not follow a "\r" as "\r\n".
func toCRLF(s string) string {
	n := strings.Count(s, "\n") - strings.Count(s, "\r\n")
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + n)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		if i == 0 || s[i-1] != '\r' {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
		s = s[i+1:]
	}
}

// toLF writes each "\r\n" of s as "\n".
func toLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// replacement is an edit's old and new strings as written in the file
// they edit.
type replacement struct {
	old, new string
	ends     lineEnds // the file's line ends
}

// replacementIn writes old and new as the lines of text are written: in a
// text whose lines all end in "\r\n", a "\n" of either stands for "\r\n"
// (the model reads the file's lines without their ends and writes them
// with "\n"), and a "\r" that ends old but not new, or new but not old,
// is the first half of a line end that the edit keeps; in any other text,
// old and new are used as they are.
func replacementIn(text, old, new string) replacement {
	r := replacement{old: old, new: new, ends: lineEndsOf(text)}
	if r.ends == endsCRLF {
		r.old, r.new = toCRLF(old), toCRLF(new)
		switch oldCR, newCR := strings.HasSuffix(r.old, "\r"), strings.HasSuffix(r.new, "\r"); {
		case oldCR && !newCR:
			r.new += "\r"
		case newCR && !oldCR:
			r.new = strings.TrimSuffix(r.new, "\r")
		}
	}
	return r
}

// apply replaces the first n occurrences of r.old in text by r.new. A text
// that starts with a byte order mark keeps it, once, whether or not old or
// new start with one.
func (r replacement) apply(text string, n int) string {
	out := strings.Replace(text, r.old, r.new, n)
	if strings.HasPrefix(text, bom) {
		for strings.HasPrefix(out, bom) {
			out = out[len(bom):]
		}
		out = bom + out
	}
	return out
}

// nearMiss explains why r.old is not in text (see nearMiss), showing a
// text whose lines all end in "\r\n" as the model reads it, without the
// "\r". In a text of mixed line ends it says so, as old was matched as
// written.
func (r replacement) nearMiss(text, old, path string) string {
	if r.ends == endsCRLF {
		return nearMiss(toLF(text), toLF(old), path)
	}
	msg := nearMiss(text, old, path)
	if r.ends == endsMixed && strings.Contains(old, "\n") {
		msg += ` The file mixes "\r\n" and "\n" line ends, so old_string is matched as written: end each of its lines as that line ends in the file.`
	}
	return msg
}
