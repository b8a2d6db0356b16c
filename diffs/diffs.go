// Package diffs describes what a call changed, or would change: each
// STATE slice whose value differs, as a unified diff of its JSON, and each
// file, as a unified diff of its text. The dry run's result carries one
// (package server), and so does a kept commit of a session's history
// (package sessions), which the console shows.
package diffs

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is what a call changed: each STATE slice whose value differs, as a
// unified diff of its JSON, and each file.
type Diff struct {
	State []SliceDiff `json:"state"`
	Files []FileDiff  `json:"files"`
}

// SliceDiff is the change of one STATE slice.
type SliceDiff struct {
	Slice string `json:"slice"`
	Diff  string `json:"diff"`
}

// FileDiff is the change of one file: "added", "removed" or "modified",
// with a unified diff of its text (empty for a binary file).
type FileDiff struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

// New returns an empty Diff, whose lists encode as [] rather than null.
func New() Diff { return Diff{State: []SliceDiff{}, Files: []FileDiff{}} }

// AddSlice adds the change of slice name from before to after (JSON).
func (d *Diff) AddSlice(name, before, after string) {
	d.State = append(d.State, SliceDiff{Slice: name, Diff: Unified(name, name, before, after)})
}

// AddFile adds the change of the file at path: existed and exists say
// whether it was there before and after, with the content before and
// after.
func (d *Diff) AddFile(path string, existed, exists bool, before, after []byte) {
	f := FileDiff{Path: path, Status: "modified"}
	from, to := "a/"+path, "b/"+path
	switch {
	case !existed:
		f.Status, from = "added", "/dev/null"
	case !exists:
		f.Status, to = "removed", "/dev/null"
	}
	if Text(before) && Text(after) {
		f.Diff = Unified(from, to, string(before), string(after))
	}
	d.Files = append(d.Files, f)
}

// Text is the diff for the model: every slice's, then every file's, led
// by lead, or none when nothing changed.
func (d Diff) Text(lead, none string) string {
	if len(d.State) == 0 && len(d.Files) == 0 {
		return none
	}
	var b strings.Builder
	b.WriteString(lead + "\n")
	for _, s := range d.State {
		fmt.Fprintf(&b, "\nState %s:\n%s", s.Slice, s.Diff)
	}
	for _, f := range d.Files {
		if f.Diff == "" {
			fmt.Fprintf(&b, "\nBinary file %s %s\n", f.Path, f.Status)
			continue
		}
		b.WriteString("\n" + f.Diff)
	}
	return b.String()
}

// Text reports whether data is text a line diff can show.
func Text(data []byte) bool { return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 }

// Unified is the unified diff from a to b, with three lines of context.
func Unified(from, to, a, b string) string {
	s, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: from, ToFile: to, Context: 3,
	})
	return s
}

// lines splits s into lines that keep their newline; a last line without
// one gets one.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		return out[:len(out)-1]
	}
	out[len(out)-1] += "\n"
	return out
}
