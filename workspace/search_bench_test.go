package workspace

import "testing"

// BenchmarkSearch measures grep and glob through the whole pipeline over
// the large workspace (10,000 files, 100 MB) on both backends: a literal
// found nowhere, a regular expression with a required literal, the same
// case-insensitive, a count of a common literal (every file matches: the
// totals), and a glob. Profile it with -cpuprofile; compare it with
// ripgrep with bench/ on a real tree.
func BenchmarkSearch(b *testing.B) {
	calls := []struct{ name, tool, args string }{
		{"grep_nowhere", "grep", `{"pattern":"zqxjkv_nowhere"}`},
		{"grep_regexp", "grep", `{"pattern":"ab[c-e]defg\\d"}`},
		{"grep_fold", "grep", `{"pattern":"ABCDEFGHI","case_insensitive":true,"output_mode":"files_with_matches"}`},
		{"grep_count", "grep", `{"pattern":"0123","output_mode":"count"}`},
		{"glob", "glob", `{"pattern":"**/*.txt"}`},
	}
	for _, bk := range backends {
		var h *harness // one tree per backend, as in BenchmarkFailedApplyEdits
		for _, c := range calls {
			b.Run(bk.name+"/"+c.name, func(sb *testing.B) {
				if h == nil {
					// Of the outer benchmark: a disk tree lives in its
					// temporary directory, for every call.
					h = newHarness(b, bk, largeTree())
				}
				for sb.Loop() {
					h.mustCall(c.tool, c.args)
				}
			})
		}
	}
}
