package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCallLogSurvivesRestart: the call log of a stdio process's named
// session is in the embedded store: after the process exits and another
// starts with the same flags, wink://session/log lists the calls made
// before, in order, and wink://session/calls/{call_id} returns a call's
// whole record.
func TestCallLogSurvivesRestart(t *testing.T) {
	args := []string{"--session", "desk", "--state-dir", t.TempDir(), "--store", "embedded"}
	p := start(t, "", args...)
	keepState(t, &stdioClient{p: p, modern: true}, true)
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}

	p = start(t, "", args...)
	read := func(id int, uri string) string {
		t.Helper()
		f := p.call(id, "resources/read", map[string]any{"uri": uri, "_meta": modernMeta()})
		var res struct{ Contents []struct{ Text string } }
		if err := json.Unmarshal(f.Result, &res); err != nil || len(res.Contents) != 1 {
			t.Fatalf("%s: %s %+v", uri, f.Result, f.Error)
		}
		return res.Contents[0].Text
	}
	var log []struct {
		CallID string `json:"call_id"`
		Tool   string `json:"tool"`
	}
	if err := json.Unmarshal([]byte(read(1, "wink://session/log")), &log); err != nil {
		t.Fatal(err)
	}
	var tools []string
	write := ""
	for _, c := range log {
		tools = append(tools, c.Tool)
		if c.Tool == "write_file" {
			write = c.CallID
		}
	}
	want := "planning_setup_plan planning_add_step planning_update_step write_file edit_file read_file planning_read_plan"
	if got := strings.Join(tools, " "); got != want {
		t.Fatalf("log after the restart: %s, want %s", got, want)
	}
	var rec struct {
		Arguments struct {
			Content string `json:"content"`
		} `json:"arguments"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(read(2, "wink://session/calls/"+write)), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Arguments.Content != "hello\n" || !strings.HasPrefix(rec.Message, "Created notes.md") {
		t.Errorf("the write's record after the restart: %+v", rec)
	}
}
