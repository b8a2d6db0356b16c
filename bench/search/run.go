package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// A searchCase is one search timed on both sides: a tools/call of the
// server against a whole run of rg.
type searchCase struct {
	name string
	tool string
	args map[string]any
	rg   []string // rg's arguments; its directory is the tree
	// check compares what the server found with rg's output, in words;
	// nil when the case only times.
	check func(s *server, rgOut []byte) (string, error)
}

// errUnsupported marks a case the server refuses as it does not know an
// argument yet.
var errUnsupported = errors.New("unsupported")

// server is a wink-mcp serving the tree over stdio.
type server struct {
	p *mcpc.Process
	c *mcpc.Stdio
}

// toolResult is what the runner reads of a tools/call result.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured map[string]any `json:"structuredContent"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// call makes one tools/call; a result with isError is an error, which
// wraps errUnsupported when an argument is unknown.
func (s *server) call(tool string, args map[string]any) (toolResult, error) {
	raw, _ := json.Marshal(args)
	out, err := s.c.Call(context.Background(), "tools/call", mcpc.Params(tool, raw, false))
	if err != nil {
		return toolResult{}, s.p.Explain(err)
	}
	var r toolResult
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("malformed result: %w", err)
	}
	if r.IsError {
		if strings.Contains(r.text(), "Unknown argument") {
			return r, fmt.Errorf("%w: %.200s", errUnsupported, r.text())
		}
		return r, fmt.Errorf("%s failed: %.300s", tool, r.text())
	}
	return r, nil
}

// pages calls tool with args and each next_cursor after, and returns the
// results.
func (s *server) pages(tool string, args map[string]any) ([]toolResult, error) {
	var out []toolResult
	a := maps.Clone(args)
	for {
		r, err := s.call(tool, a)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		next, _ := r.Structured["next_cursor"].(string)
		if next == "" {
			return out, nil
		}
		a["cursor"] = next
	}
}

// strs returns the strings of a JSON array.
func strs(v any) []string {
	var out []string
	a, _ := v.([]any)
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// matchCount pages through grep in content mode and returns the number of
// matching lines.
func matchCount(s *server, args map[string]any) (int, error) {
	rs, err := s.pages("grep", args)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		a, _ := r.Structured["matches"].([]any)
		for _, m := range a {
			// A line of context is an entry with context: true.
			if o, ok := m.(map[string]any); ok && o["context"] == true {
				continue
			}
			n++
		}
	}
	return n, nil
}

// fileSet pages through a result listing files (grep files_with_matches,
// glob) and returns them, from "files" or else the paths of "matches".
func fileSet(s *server, tool string, args map[string]any) ([]string, error) {
	rs, err := s.pages(tool, args)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range rs {
		files := strs(r.Structured["files"])
		if files == nil {
			a, _ := r.Structured["matches"].([]any)
			for _, m := range a {
				if o, ok := m.(map[string]any); ok {
					if p, ok := o["path"].(string); ok {
						files = append(files, p)
					}
				}
			}
		}
		for _, f := range files {
			seen[f] = true
		}
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// countTotal calls grep in count mode and returns the total of matching
// lines: a top-level total field, or else the sum of the files' counts.
func countTotal(s *server, args map[string]any) (int, string, error) {
	rs, err := s.pages("grep", args)
	if err != nil {
		return 0, "", err
	}
	for _, key := range []string{"total_matches", "total", "count"} {
		if v, ok := rs[0].Structured[key].(float64); ok {
			return int(v), key, nil
		}
	}
	sum := 0
	for _, r := range rs {
		for _, key := range []string{"counts", "files", "matches"} {
			a, _ := r.Structured[key].([]any)
			for _, m := range a {
				if o, ok := m.(map[string]any); ok {
					if v, ok := o["count"].(float64); ok {
						sum += int(v)
					}
				}
			}
		}
	}
	return sum, "sum of the files' counts", nil
}

// rgLines returns the lines of rg's output, each path made relative and
// slash-separated ("./a/b" as "a/b").
func rgLines(out []byte) []string {
	var lines []string
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSuffix(l, "\n")
		if l != "" {
			lines = append(lines, filepath.ToSlash(strings.TrimPrefix(l, "./")))
		}
	}
	sort.Strings(lines)
	return lines
}

// compareSets says whether two sorted lists are equal, and if not what
// the first difference is.
func compareSets(what string, wink, rg []string) string {
	if slices.Equal(wink, rg) {
		return fmt.Sprintf("same %s (%d)", what, len(rg))
	}
	onlyW, onlyR := diff(wink, rg), diff(rg, wink)
	msg := fmt.Sprintf("DIFFERENT %s: wink %d, rg %d", what, len(wink), len(rg))
	if len(onlyW) > 0 {
		msg += fmt.Sprintf("; only wink: %d, such as %s", len(onlyW), onlyW[0])
	}
	if len(onlyR) > 0 {
		msg += fmt.Sprintf("; only rg: %d, such as %s", len(onlyR), onlyR[0])
	}
	return msg
}

// diff returns the elements of a not in b, both sorted.
func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

func compareCounts(what string, wink, rg int) string {
	if wink == rg {
		return fmt.Sprintf("same %s (%d)", what, rg)
	}
	return fmt.Sprintf("DIFFERENT %s: wink %d, rg %d", what, wink, rg)
}

// rgCountSum sums the counts of rg -c's "path:count" lines.
func rgCountSum(out []byte) int {
	sum := 0
	for _, l := range rgLines(out) {
		if i := strings.LastIndexByte(l, ':'); i >= 0 {
			n, _ := strconv.Atoi(l[i+1:])
			sum += n
		}
	}
	return sum
}

// cases returns the cases on a tree searched for the literal absent and
// the regular expression re.
func cases(absent, re string) []searchCase {
	grep := func(extra map[string]any) map[string]any {
		a := map[string]any{"pattern": re}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	return []searchCase{
		{"literal found nowhere", "grep", map[string]any{"pattern": absent}, []string{absent},
			func(s *server, rgOut []byte) (string, error) {
				n, err := matchCount(s, map[string]any{"pattern": absent})
				return compareCounts("matching lines", n, len(rgLines(rgOut))), err
			}},
		{"regexp", "grep", grep(nil), []string{re},
			func(s *server, rgOut []byte) (string, error) {
				n, err := matchCount(s, grep(nil))
				return compareCounts("matching lines", n, len(rgLines(rgOut))), err
			}},
		{"glob **/*_test.go", "glob", map[string]any{"pattern": "**/*_test.go"}, []string{"--files", "-g", "*_test.go"},
			func(s *server, rgOut []byte) (string, error) {
				files, err := fileSet(s, "glob", map[string]any{"pattern": "**/*_test.go"})
				return compareSets("files", files, rgLines(rgOut)), err
			}},
		{"files_with_matches", "grep", grep(map[string]any{"output_mode": "files_with_matches"}), []string{"-l", re},
			func(s *server, rgOut []byte) (string, error) {
				files, err := fileSet(s, "grep", grep(map[string]any{"output_mode": "files_with_matches"}))
				return compareSets("files", files, rgLines(rgOut)), err
			}},
		{"type go, files", "grep", grep(map[string]any{"output_mode": "files_with_matches", "type": "go"}), []string{"-t", "go", "-l", re},
			func(s *server, rgOut []byte) (string, error) {
				files, err := fileSet(s, "grep", grep(map[string]any{"output_mode": "files_with_matches", "type": "go"}))
				return compareSets("files", files, rgLines(rgOut)), err
			}},
		{"count", "grep", grep(map[string]any{"output_mode": "count"}), []string{"-c", re},
			func(s *server, rgOut []byte) (string, error) {
				n, how, err := countTotal(s, grep(map[string]any{"output_mode": "count"}))
				return compareCounts("total ("+how+")", n, rgCountSum(rgOut)), err
			}},
		{"count, case_insensitive", "grep", grep(map[string]any{"output_mode": "count", "case_insensitive": true}), []string{"-i", "-c", re},
			func(s *server, rgOut []byte) (string, error) {
				n, how, err := countTotal(s, grep(map[string]any{"output_mode": "count", "case_insensitive": true}))
				return compareCounts("total ("+how+")", n, rgCountSum(rgOut)), err
			}},
		{"context 2", "grep", grep(map[string]any{"context": 2}), []string{"-C", "2", re}, nil},
		{"multiline", "grep", map[string]any{"pattern": re + `[^\n]*\n[^\n]*\S`, "multiline": true},
			[]string{"-U", "--multiline-dotall", re + `[^\n]*\n[^\n]*\S`}, nil},
	}
}

// runOpts are the settings of run.
type runOpts struct {
	bin, rg, tree, label, absent, re string
	runs                             int
}

// run serves tree with --workspace, times each case against rg, and
// prints a table, the checks, the server's peak RSS and the tools/list
// size of a default server.
func run(o runOpts) error {
	tmp, err := os.MkdirTemp("", "bench-search-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A generous deadline: the benchmark measures a search, not its cut.
	cfg := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfg, []byte("deadline: 10m\n"), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, c, err := mcpc.StartStdio(ctx, []string{o.bin, "--workspace", o.tree, "--state-dir", filepath.Join(tmp, "state"), "--config", cfg})
	if err != nil {
		return err
	}
	defer p.Kill()
	if err := mcpc.Initialize(ctx, c); err != nil {
		return p.Explain(err)
	}
	s := &server{p: p, c: c}
	fmt.Printf("\n=== %s: %s (median of %d after a warm-up; server: one tools/call's round trip; rg: its whole run)\n", o.label, o.tree, o.runs)
	fmt.Printf("%-26s %10s %10s %7s %12s  %s\n", "case", "wink ms", "rg ms", "ratio", "run ratios", "check")
	for _, sc := range cases(o.absent, o.re) {
		t, rgOut, err := timeCase(s, o, sc)
		switch {
		case errors.Is(err, errUnsupported):
			fmt.Printf("%-26s %10s %10s %7s %12s  %s\n", sc.name, "-", "-", "-", "-", firstLine(err.Error()))
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		check := ""
		if sc.check != nil {
			if check, err = sc.check(s, rgOut); err != nil {
				check = "check failed: " + firstLine(err.Error())
			}
		}
		lo, hi := t.ratios()
		fmt.Printf("%-26s %10.1f %10.1f %6.1f× %12s  %s\n", sc.name, ms(median(t.wink)), ms(median(t.rg)),
			float64(median(t.wink))/float64(median(t.rg)), fmt.Sprintf("%.1f-%.1f×", lo, hi), check)
	}
	fmt.Printf("server peak RSS (VmHWM): %.1f MiB\n", float64(p.PeakRSS())/1024)
	return p.Stop(10 * time.Second)
}

// timings are the timed runs of a case, in order, on each side.
type timings struct{ wink, rg []time.Duration }

// ratios returns the least and the greatest ratio of a run's wink time to
// the rg time of the same run.
func (t timings) ratios() (lo, hi float64) {
	for i := range t.wink {
		r := float64(t.wink[i]) / float64(t.rg[i])
		if i == 0 || r < lo {
			lo = r
		}
		if i == 0 || r > hi {
			hi = r
		}
	}
	return lo, hi
}

// timeCase runs sc once on each side to warm up, then o.runs times each,
// alternating, and returns the timings and rg's last output.
func timeCase(s *server, o runOpts, sc searchCase) (t timings, rgOut []byte, err error) {
	for i := range o.runs + 1 {
		start := time.Now()
		if _, err := s.call(sc.tool, sc.args); err != nil {
			return t, nil, err
		}
		w := time.Since(start)
		start = time.Now()
		if rgOut, err = runRg(o, sc.rg); err != nil {
			return t, nil, err
		}
		r := time.Since(start)
		if i > 0 {
			t.wink, t.rg = append(t.wink, w), append(t.rg, r)
		}
	}
	return t, rgOut, nil
}

// runRg runs rg with args in the tree and returns its output; exit status
// 1 (nothing found) is not an error.
func runRg(o runOpts, args []string) ([]byte, error) {
	cmd := exec.Command(o.rg, args...)
	cmd.Dir = o.tree
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0 {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("rg %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.Bytes(), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// toolsListSize starts a default server (its own state directory, nothing
// else) and returns the bytes of each tool's name, description and input
// schema as JSON, and their sum.
func toolsListSize(bin string) (map[string]int, int, error) {
	tmp, err := os.MkdirTemp("", "bench-search-list-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, c, err := mcpc.StartStdio(ctx, []string{bin, "--state-dir", tmp})
	if err != nil {
		return nil, 0, err
	}
	defer p.Kill()
	if err := mcpc.Initialize(ctx, c); err != nil {
		return nil, 0, p.Explain(err)
	}
	raw, err := c.Call(ctx, "tools/list", json.RawMessage(`{}`))
	if err != nil {
		return nil, 0, p.Explain(err)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, 0, err
	}
	sizes, total := map[string]int{}, 0
	for _, t := range list.Tools {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, 0, err
		}
		sizes[t.Name] = len(b)
		total += len(b)
	}
	return sizes, total, p.Stop(10 * time.Second)
}
