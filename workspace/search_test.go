package workspace

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// plainFind is what grep must find: the lines (from 1) of text the
// regular expression of m matches, each line tried alone; with multiline,
// the first line of each match over the whole text.
func plainFind(m *matcher, text string) []int {
	var out []int
	if m.multiline {
		for _, loc := range m.re.FindAllStringIndex(text, -1) {
			out = append(out, strings.Count(text[:loc[0]], "\n")+1)
		}
		return slices.Compact(out)
	}
	if text == "" {
		return nil // an empty file has no lines
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if m.re.MatchString(l) {
			out = append(out, i+1)
		}
	}
	return out
}

// fastFind is what the matcher finds, prefilter and all.
func fastFind(m *matcher, text string) []int {
	var out []int
	var st scanState
	m.find(&st, []byte(text), func(h hit) bool {
		out = append(out, h.first)
		return true
	})
	return slices.Compact(out)
}

// FuzzPrefilter: for any pattern, text and flags, the search that finds
// the pattern's required literal first finds exactly the lines the
// regular expression alone finds.
func FuzzPrefilter(f *testing.F) {
	for _, s := range []struct {
		pattern, text string
		fold, multi   bool
	}{
		{`runtime\.KeepAlive\(`, "x\nruntime.KeepAlive(y)\n", false, false},
		{`keepalive`, "KEEPALIVE\nKeepAlive\n\u212aeepalive\n", true, false},
		{`TODO|FIXME`, "a TODO\nfixme\nFIXME b", true, false},
		{`(?i)s+tr`, "\u017fTR\nSSTR\n", false, false},
		{`a\nb`, "a\nb\n", false, true},
		{`a\nb`, "a\nb\n", false, false},
		{`0123`, "x0123\n0123 0123\n", false, false},
		{`foo.*bar`, "foo\nbar\nfoobar", false, true},
		{`^$`, "\n\nx\n", false, false},
		{`(ab)+c{2,}`, "ababcc\nabc\n", false, false},
		{`x*`, "", false, false},
	} {
		f.Add(s.pattern, s.text, s.fold, s.multi)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold, multi bool) {
		m, err := newMatcher(pattern, fold, multi)
		if err != nil {
			return
		}
		if got, want := fastFind(m, text), plainFind(m, text); !slices.Equal(got, want) {
			t.Fatalf("pattern %q (fold %v, multiline %v) on %q: found lines %v, the regular expression alone %v", pattern, fold, multi, text, got, want)
		}
	})
}

// TestRequiredLiterals: the literals a pattern requires, in the case
// they are searched in; none where a match may do without.
func TestRequiredLiterals(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    string // the literals, | between them; fold marked (?i)
	}{
		{`runtime\.KeepAlive\(`, "runtime.KeepAlive("},
		{`func \w+\(ctx`, "func "},
		{`(?i)keepalive`, "(?i)eepalive"},
		{`(?i)Kelvin`, "(?i)elvin"},
		{`TODO|FIXME`, "TODO|FIXME"},
		{`(foo)+bar?`, "foo"},
		{`[a-z]+`, ""},
		{`foo|[a-z]`, ""},
		{`(?:abc)?def`, "def"},
		{`x{0,3}`, ""},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if p := newPrefilter(re.Simplify()); p != nil {
			for _, n := range p.needles {
				s := string(n.lit)
				if n.fold {
					s = "(?i)" + s
				}
				got = append(got, s)
			}
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("%s: literals %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

// TestScanFile: the groups of lines grep shows for a file: matches and
// their context merged as ripgrep merges them, multiline matches whole,
// a cursor's line skipping what came before, and the cap.
func TestScanFile(t *testing.T) {
	text := "a\nhit 1\nb\nc\nhit 2\nhit 3\nd\ne\nf\ng\nhit 4\n"
	for _, tc := range []struct {
		name                string
		pattern             string
		multi               bool
		before, after       int
		from, keep          int
		want                string // groups by |, lines as ripgrep's prefixes
		matches, wantMoreAt int
	}{
		{"plain", "hit", false, 0, 0, 0, 10, "2:|5:|6:|11:", 4, 0},
		{"context merges", "hit", false, 1, 1, 0, 10, "1-2:3-4-5:6:7-|10-11:", 4, 0},
		{"before only", "hit", false, 2, 0, 0, 10, "1-2:3-4-5:6:|9-10-11:", 4, 0},
		{"after past the end", "hit 4", false, 0, 3, 0, 10, "11:", 1, 0},
		{"from a cursor", "hit", false, 0, 0, 5, 10, "5:|6:|11:", 4, 0},
		{"capped", "hit", false, 0, 0, 0, 2, "2:|5:", 4, 6},
		{"capped inside a group", "hit", false, 1, 1, 0, 2, "1-2:3-4-5:", 4, 6},
		{"multiline", `hit 2\nhit`, true, 0, 1, 0, 10, "5:6:7-", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newMatcher(tc.pattern, false, tc.multi)
			if err != nil {
				t.Fatal(err)
			}
			m.before, m.after = tc.before, tc.after
			var st scanState
			res := m.scanFile(&st, "f", []byte(text), scanShow, tc.from, tc.keep, PageBytes)
			var groups []string
			for _, g := range res.groups {
				var b strings.Builder
				for _, l := range g.lines {
					sep := ":"
					if l.Context {
						sep = "-"
					}
					fmt.Fprintf(&b, "%d%s", l.Line, sep)
				}
				groups = append(groups, b.String())
			}
			if got := strings.Join(groups, "|"); got != tc.want || res.matches != tc.matches || res.more != tc.wantMoreAt {
				t.Errorf("groups %s, %d matches, more at %d; want %s, %d, %d", got, res.matches, res.more, tc.want, tc.matches, tc.wantMoreAt)
			}
		})
	}
}

// TestWindow: a very long line is shown as the MaxLineBytes around its
// match, cut at rune boundaries and marked on each side it was cut.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		line       string
		at         int
		head, tail string
	}{
		{"short", "abc", 1, "abc", "abc"},
		{"match far in", strings.Repeat("a", 9000) + "X" + strings.Repeat("b", 9000), 9000, "[... 8000 bytes before] aaa", "bbb [... 6001 more bytes]"},
		{"match at the start", "X" + strings.Repeat("é", 5000), 0, "Xé", "é [... 6002 more bytes]"},
		{"match at the end", strings.Repeat("a", 9000) + "X", 9000, "[... 5001 bytes before] aaa", "aX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := window([]byte(tc.line), tc.at)
			if !strings.HasPrefix(got, tc.head) || !strings.HasSuffix(got, tc.tail) || len(got) > MaxLineBytes+60 {
				t.Errorf("window: %d bytes, %.40q ... %.40q", len(got), got, got[max(0, len(got)-40):])
			}
			if tc.line[tc.at] == 'X' && !strings.Contains(got, "X") {
				t.Errorf("the window leaves out the match")
			}
		})
	}
}

// TestFileTypes: each type narrows to the files ripgrep's does.
func TestFileTypes(t *testing.T) {
	for _, tc := range []struct {
		typ, name string
		want      bool
	}{
		{"go", "main.go", true},
		{"go", "main.go.orig", false},
		{"c", "x.h", true},
		{"cpp", "x.hpp", true},
		{"make", "Makefile", true},
		{"make", "rules.mk", true},
		{"docker", "Dockerfile.dev", true},
		{"md", "README.md", true},
		{"ts", "app.tsx", true},
		{"py", "x.pyc", false},
	} {
		if got := matchesType(fileTypes[tc.typ], tc.name); got != tc.want {
			t.Errorf("type %s, %s: %v", tc.typ, tc.name, got)
		}
	}
}

// TestGrepSeesChanges: nothing is cached between two greps; the second
// finds what changed since the first, on both backends.
func TestGrepSeesChanges(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, map[string]string{"a.txt": "old needle\n"})
		step{"grep", `{"pattern":"needle"}`, "Found 1 match in 1 file.\n\na.txt:1: old needle", false}.check(t, h)
		h.mustCall("read_file", `{"file_path":"a.txt"}`)
		h.mustCall("write_file", `{"file_path":"a.txt","content":"new\nneedle again\n","overwrite":true}`)
		h.mustCall("write_file", `{"file_path":"b/c.txt","content":"a needle\n"}`)
		step{"grep", `{"pattern":"needle"}`, "Found 2 matches in 2 files.\n\na.txt:2: needle again\nb/c.txt:1: a needle", false}.check(t, h)
	})
}

// TestGrepBinaryRule: grep decides as ripgrep does: a NUL byte in the
// first 64 KiB skips a file, text that is not valid UTF-8 is searched, and
// a NUL byte further on ends what is searched.
func TestGrepBinaryRule(t *testing.T) {
	files := map[string]string{
		"bin/blob.bin": "\x00\x01needle",
		"latin1.txt":   "caf\xe9 needle\n",
		"late-nul.txt": "needle before\n" + strings.Repeat("x\n", 40<<10) + "\x00needle after\n",
		"plain.txt":    "needle\n",
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files)
		step{"grep", `{"pattern":"needle","output_mode":"count"}`, "Found 3 matches in 3 files.\n\nlate-nul.txt:1\nlatin1.txt:1\nplain.txt:1", false}.check(t, h)
		step{"grep", `{"pattern":"caf. needle"}`, "Found 1 match in 1 file.\n\nlatin1.txt:1: caf\ufffd needle", false}.check(t, h)
	})
}
