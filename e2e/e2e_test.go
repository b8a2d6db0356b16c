package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var (
	update     = flag.Bool("update", false, "rewrite the responses file of every scenario from the actual output")
	runSkipped = flag.Bool("skipped", false, "also run the scenarios marked skip: (known bugs); they are never rewritten by -update")
)

// scenarioDir holds the scenario files, relative to this package.
const scenarioDir = "../testdata/scenarios"

// TestScenarios runs every testdata/scenarios/*.txtar against a fresh
// process. See testdata/scenarios/README.md for the format.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(scenarioDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no scenarios in %s", scenarioDir)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := parseScenario(path)
			if err != nil {
				t.Fatal(err)
			}
			if sc.skip != "" && !*runSkipped {
				t.Skipf("skip: %s", sc.skip)
			}
			sc.run(t)
		})
	}
}

// scenario is one parsed .txtar file.
type scenario struct {
	path     string
	archive  *txtar.Archive
	args     []string // extra command-line arguments
	config   string   // archive file passed as --config, or ""
	exit     int      // expected exit code
	stderr   []string // substrings expected in stderr
	raw      bool     // do not send initialize first
	pipeline bool     // write every request at once
	skip     string   // reason to skip, or ""
	huge     int      // size of the generated huge line, or 0
	requests []string
	// responses are the expected normalised stdout frames.
	responses []string
}

// parseScenario reads and checks a scenario file.
func parseScenario(path string) (*scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := &scenario{path: path, archive: txtar.Parse(data)}
	for i, line := range strings.Split(string(sc.archive.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want a directive \"key: value\", got %q", path, i+1, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		bad := func(err error) error { return fmt.Errorf("%s:%d: %s: %v", path, i+1, key, err) }
		switch key {
		case "args":
			sc.args = append(sc.args, strings.Fields(value)...)
		case "config":
			sc.config = value
		case "exit":
			if sc.exit, err = strconv.Atoi(value); err != nil {
				return nil, bad(err)
			}
		case "stderr":
			sc.stderr = append(sc.stderr, value)
		case "raw":
			if sc.raw, err = strconv.ParseBool(value); err != nil {
				return nil, bad(err)
			}
		case "pipeline":
			if sc.pipeline, err = strconv.ParseBool(value); err != nil {
				return nil, bad(err)
			}
		case "skip":
			sc.skip = value
		case "huge":
			if sc.huge, err = strconv.Atoi(value); err != nil || sc.huge < len(hugeLine(0)) {
				return nil, bad(fmt.Errorf("want a size of at least %d bytes, got %q", len(hugeLine(0)), value))
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown directive %q", path, i+1, key)
		}
	}
	hugeAt := -1
	for _, f := range sc.archive.Files {
		switch f.Name {
		case "requests":
			for _, line := range strings.Split(string(f.Data), "\n") {
				if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
					continue
				}
				if line == hugeMarker {
					if sc.huge == 0 {
						return nil, fmt.Errorf("%s: requests: %s without a huge directive", path, hugeMarker)
					}
					hugeAt = len(sc.requests)
				}
				sc.requests = append(sc.requests, line)
			}
		case "responses":
			for _, line := range strings.Split(string(f.Data), "\n") {
				if line != "" {
					sc.responses = append(sc.responses, line)
				}
			}
		}
	}
	if sc.huge > 0 && hugeAt < 0 {
		sc.requests = append(sc.requests, hugeMarker)
	}
	if sc.config != "" && file(sc.archive, sc.config) == nil {
		return nil, fmt.Errorf("%s: config: no file %q in the archive", path, sc.config)
	}
	return sc, nil
}

// hugeMarker is the requests line replaced by the generated huge line.
const hugeMarker = "@huge"

// hugeLine returns a ping request padded to exactly n bytes (or the
// shortest one, when n is too small).
func hugeLine(n int) string {
	const tail = `"}}}`
	pad := max(0, n-len(hugeHead)-len(tail))
	return hugeHead + strings.Repeat("x", pad) + tail
}

// hugeHead starts every generated huge line.
const hugeHead = `{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"_meta":{"pad":"`

func file(ar *txtar.Archive, name string) *txtar.File {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			return &ar.Files[i]
		}
	}
	return nil
}

// run runs the scenario and compares (or, with -update, records) its
// output.
func (sc *scenario) run(t *testing.T) {
	dir := t.TempDir()
	for _, f := range sc.archive.Files {
		if f.Name == "requests" || f.Name == "responses" {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	if sc.config != "" {
		args = append(args, "--config", filepath.Join(dir, filepath.FromSlash(sc.config)))
	}
	args = append(args, sc.args...)

	lines := slices.Clone(sc.requests)
	if !sc.raw {
		lines = append([]string{initializeRequest, initializedNotification}, lines...)
	}
	for i, l := range lines {
		if l == hugeMarker {
			lines[i] = hugeLine(sc.huge)
		}
	}

	p := start(t, dir, args...)
	var writeErr error
	if sc.pipeline {
		done := make(chan error, 1)
		go func() {
			var err error
			for _, l := range lines {
				if err = p.send(l); err != nil {
					break
				}
			}
			p.closeStdin()
			done <- err
		}()
		defer func() {
			if err := <-done; err != nil && sc.exit == 0 {
				t.Errorf("writing to stdin: %v", err)
			}
		}()
	} else {
		for _, l := range lines {
			if writeErr = p.send(l); writeErr != nil {
				break
			}
			if id, ok := awaits(l); ok {
				if _, ok := p.await(id); !ok {
					break // the process ended; the checks below say why
				}
			}
		}
		p.closeStdin()
	}
	code := p.wait()
	stderr := p.stderr.String()

	if writeErr != nil && sc.exit == 0 {
		t.Errorf("writing to stdin: %v", writeErr)
	}
	if code != sc.exit {
		t.Errorf("exit code %d, want %d", code, sc.exit)
	}
	for _, s := range sc.stderr {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr does not contain %q", s)
		}
	}
	if sc.exit == 0 {
		checkStderr(t, stderr)
	}
	checkFrames(t, p.out)
	checkInitializeFirst(t, lines, p.out)

	got := make([]string, len(p.out))
	for i, line := range p.out {
		n, err := normalise(line)
		if err != nil {
			n = string(line)
		}
		got[i] = n
	}
	if sc.pipeline {
		slices.Sort(got)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
	if *update && sc.skip == "" {
		sc.writeResponses(t, got)
		return
	}
	if !slices.Equal(got, sc.responses) {
		hint := fmt.Sprintf("go test ./e2e -run 'TestScenarios/%s' -update rewrites them", strings.TrimSuffix(filepath.Base(sc.path), ".txtar"))
		if sc.skip != "" {
			hint = "a known bug: " + sc.skip
		}
		t.Errorf("responses differ (-want +got; %s):\n%s", hint, diffLines(sc.responses, got))
	}
}

// awaits reports whether a line sent to the server is answered, and the
// id (compact JSON) of the answer; "" means the next response, whatever
// its id (a line that is not a JSON-RPC request or notification is
// answered with id null).
func awaits(line string) (string, bool) {
	if strings.HasPrefix(line, hugeHead) {
		return "", true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return "", true
	}
	id, hasID := m["id"]
	id = []byte(compactJSON(id))
	hasID = hasID && len(id) > 0 && string(id) != "null"
	_, hasMethod := m["method"]
	switch {
	case hasMethod && hasID && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9'):
		return compactJSON(id), true
	case hasMethod && hasID: // an id of the wrong type is answered with id null
		return "", true
	case hasMethod || hasID: // a notification, or a response to the server
		return "", false
	}
	return "", true
}

// checkInitializeFirst checks that the answer to the first initialize
// request sent, if any, is the first response written.
func checkInitializeFirst(t *testing.T, sent []string, out [][]byte) {
	t.Helper()
	initID := ""
	for _, l := range sent {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &req) == nil && req.Method == "initialize" && req.ID != nil {
			initID = compactJSON(req.ID)
			break
		}
	}
	if initID == "" {
		return
	}
	for _, line := range out {
		var f frame
		if json.Unmarshal(line, &f) != nil || !f.isResponse() {
			continue
		}
		if got := compactJSON(f.ID); got != initID {
			t.Errorf("first response answers id %s, want the initialize request (id %s)", got, initID)
		}
		return
	}
}

// writeResponses rewrites the scenario's responses file.
func (sc *scenario) writeResponses(t *testing.T, got []string) {
	var data []byte
	if len(got) > 0 {
		data = []byte(strings.Join(got, "\n") + "\n")
	}
	if f := file(sc.archive, "responses"); f != nil {
		f.Data = data
	} else {
		sc.archive.Files = append(sc.archive.Files, txtar.File{Name: "responses", Data: data})
	}
	if err := os.WriteFile(sc.path, txtar.Format(sc.archive), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Volatile values, replaced by placeholders.
var (
	callURI      = regexp.MustCompile(`wink://session/calls/[0-9a-f]+`)
	callName     = regexp.MustCompile(`^call [0-9a-f]+$`)
	callIDField  = regexp.MustCompile(`("call_id":\s*)"[0-9a-f]+"`)
	startedField = regexp.MustCompile(`("started":\s*)"[^"]*"`)
	durationNs   = regexp.MustCompile(`("duration_ns":\s*)-?[0-9]+`)
	handle       = regexp.MustCompile(`\bs_[A-Z2-7]{26}\b`)
)

// normalise re-marshals a frame with sorted keys and volatile values
// (call ids, start times, durations, session handles, the server's
// version) replaced by placeholders, also inside JSON held in strings
// (the text of the log resource).
func normalise(line []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", fmt.Errorf("trailing data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(scrub(v)); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func scrub(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "call_id":
				v[k] = "<id>"
			case "started":
				v[k] = "<time>"
			case "duration_ns":
				v[k] = "<dur>"
			case "serverInfo":
				// The version is "dev", or a stamp of the checkout
				// the binary was built from (go build -buildvcs=auto).
				if info, ok := x.(map[string]any); ok {
					info["version"] = "<version>"
				}
			default:
				v[k] = scrub(x)
			}
		}
		return v
	case []any:
		for i := range v {
			v[i] = scrub(v[i])
		}
		return v
	case string:
		s := callURI.ReplaceAllString(v, "wink://session/calls/<id>")
		s = callName.ReplaceAllString(s, "call <id>")
		s = callIDField.ReplaceAllString(s, `$1"<id>"`)
		s = startedField.ReplaceAllString(s, `$1"<time>"`)
		s = handle.ReplaceAllString(s, "<session>")
		return durationNs.ReplaceAllString(s, `$1"<dur>"`)
	}
	return v
}

// diffLines describes how got differs from want, line by line, with the
// common prefix and suffix left out.
func diffLines(want, got []string) string {
	pre := 0
	for pre < len(want) && pre < len(got) && want[pre] == got[pre] {
		pre++
	}
	suf := 0
	for suf < len(want)-pre && suf < len(got)-pre && want[len(want)-1-suf] == got[len(got)-1-suf] {
		suf++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ line %d (want %d lines, got %d) @@\n", pre+1, len(want), len(got))
	for _, l := range want[pre : len(want)-suf] {
		fmt.Fprintf(&b, "-%s\n", l)
	}
	for _, l := range got[pre : len(got)-suf] {
		fmt.Fprintf(&b, "+%s\n", l)
	}
	return b.String()
}
