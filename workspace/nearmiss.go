package workspace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

const (
	// maxMissDiff is the most differing lines a near-miss diff shows.
	maxMissDiff = 12
	// maxMissWindows is the most candidate windows nearMiss scores.
	maxMissWindows = 64
	// maxMissVotes bounds the anchors nearMiss counts.
	maxMissVotes = 1 << 20
)

// nearMiss explains an edit whose old string is not in text: it finds
// the window of text with as many lines as old whose lines match old's
// best once whitespace is normalised (runs collapsed, ends trimmed; old's
// first and last lines may be parts of lines), and returns its line
// numbers and a unified diff from old to it, or "" when no line matches.
// Its time is linear in the size of text and in the lines of old: for an
// old of more than two lines, the windows scored are at most
// maxMissWindows of those anchored on a middle line of old that matches
// whole, the most anchored first.
func nearMiss(text, old, path string) string {
	want := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	have := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	k, n := len(want), len(have)
	if k > n {
		return ""
	}
	normWant := make([]string, k)
	for j, l := range want {
		normWant[j] = normSpace(l)
	}
	normHave := make([]string, n)
	for i, l := range have {
		normHave[i] = normSpace(l)
	}
	// matches says whether file line i matches line j of old.
	matches := func(i, j int) bool {
		h, w := normHave[i], normWant[j]
		switch {
		case w == "":
			return h == ""
		case k == 1:
			return strings.Contains(h, w)
		case j == 0:
			return strings.HasSuffix(h, w)
		case j == k-1:
			return strings.HasPrefix(h, w)
		}
		return h == w
	}
	score := func(start int) int {
		s := 0
		for j := range k {
			if matches(start+j, j) {
				s++
			}
		}
		return s
	}
	best, bestScore := -1, 0
	consider := func(start int) {
		if sc := score(start); sc > bestScore || sc == bestScore && start < best {
			best, bestScore = start, sc
		}
	}
	if k <= 2 {
		for i := 0; i+k <= n; i++ {
			consider(i)
		}
	} else {
		// Windows anchored on the middle lines of old that match whole,
		// each with a vote per anchor; only the best voted are scored.
		at := map[string][]int{}
		for i, h := range normHave {
			at[h] = append(at[h], i)
		}
		// Rare lines anchor first; common ones ("}") only while the budget
		// of maxMissVotes lasts.
		var anchors []int
		for j := 1; j < k-1; j++ {
			if normWant[j] != "" {
				anchors = append(anchors, j)
			}
		}
		slices.SortStableFunc(anchors, func(a, b int) int { return len(at[normWant[a]]) - len(at[normWant[b]]) })
		var starts []int
		votes, budget := map[int]int{}, maxMissVotes
		for _, j := range anchors {
			if budget -= len(at[normWant[j]]); budget < 0 {
				break
			}
			for _, i := range at[normWant[j]] {
				if s := i - j; s >= 0 && s+k <= n {
					if votes[s] == 0 {
						starts = append(starts, s)
					}
					votes[s]++
				}
			}
		}
		slices.SortFunc(starts, func(a, b int) int { return cmp.Or(votes[b]-votes[a], a-b) })
		for _, s := range starts[:min(len(starts), maxMissWindows)] {
			consider(s)
		}
	}
	if best < 0 || bestScore*2 < k {
		return ""
	}
	var diff strings.Builder
	fmt.Fprintf(&diff, "--- old_string\n+++ %s\n@@ -1,%d +%d,%d @@\n", path, k, best+1, k)
	shown, more, marked := 0, 0, false
	for j := range k {
		got := have[best+j]
		switch {
		case got == want[j] || k > 1 && (j == 0 && strings.HasSuffix(got, want[j]) || j == k-1 && strings.HasPrefix(got, want[j])):
			fmt.Fprintf(&diff, " %s\n", got)
		case shown < maxMissDiff:
			shown++
			w, g := visible(want[j]), visible(got)
			marked = marked || w != want[j] || g != got
			fmt.Fprintf(&diff, "-%s\n+%s\n", w, g)
		default:
			more++
		}
	}
	if marked {
		diff.WriteString("(→ is a tab, · a space at the end of a line, ␍ a carriage return)\n")
	}
	if more > 0 {
		fmt.Fprintf(&diff, "[%d more differing lines not shown]\n", more)
	}
	span, verb := fmt.Sprintf("line %d", best+1), "matches"
	if k > 1 {
		span, verb = fmt.Sprintf("lines %d-%d", best+1, best+k), "match"
	}
	d := strings.TrimSuffix(diff.String(), "\n")
	if bestScore == k {
		return fmt.Sprintf(" %s%s %s it except for whitespace (%s); copy old_string from the file as it is:\n%s",
			strings.ToUpper(span[:1]), span[1:], verb, spaceKinds(want, have[best:best+k]), d)
	}
	return fmt.Sprintf(" The closest match is at %s; it differs as shown:\n%s", span, d)
}

// normSpace collapses runs of whitespace to one space and trims the ends.
func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// visible shows the whitespace a diff line would hide: tabs as "→" and
// spaces at the end as "·", carriage returns as "␍".
func visible(s string) string {
	trimmed := strings.TrimRight(s, " ")
	s = trimmed + strings.Repeat("·", len(s)-len(trimmed))
	return strings.NewReplacer("\t", "→", "\r", "␍").Replace(s)
}

// spaceKinds names how lines that match after normalising whitespace
// differ: indentation, trailing whitespace, spacing inside lines.
func spaceKinds(want, have []string) string {
	var kinds []string
	add := func(k string) {
		for _, x := range kinds {
			if x == k {
				return
			}
		}
		kinds = append(kinds, k)
	}
	for j := range want {
		w, h := want[j], have[j]
		if w == h || normSpace(w) != normSpace(h) {
			continue // the same, or part of the line: nothing to name
		}
		if lead(w) != lead(h) && (j > 0 || lead(w) != "") {
			add("indentation")
		}
		if strings.TrimRight(w, " \t\r") != strings.TrimRight(h, " \t\r") {
			if strings.TrimSpace(w) != strings.TrimSpace(h) {
				add("spacing inside lines")
			}
		} else if w[len(lead(w)):] != h[len(lead(h)):] {
			add("trailing whitespace")
		}
	}
	if len(kinds) == 0 {
		return "whitespace"
	}
	return strings.Join(kinds, ", ")
}

// lead returns a line's leading whitespace.
func lead(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }
