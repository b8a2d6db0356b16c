package session_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/session"
)

func TestCut(t *testing.T) {
	a30, e30 := strings.Repeat("a", 30), strings.Repeat("é", 15)
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"fits", `{"a":1}`, 10, `{"a":1}`},
		{"exactly the limit", "abcdef", 6, "abcdef"},
		{"empty", "", 0, ""},
		{"cut, marker included in the limit", a30, 20, "aa…[cut: 30 bytes]"},
		{"never inside a character", e30, 21, "é…[cut: 30 bytes]"},
		{"limit shorter than the marker", "abcdef", 3, "…[cut: 6 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := session.Cut([]byte(tt.in), tt.limit)
			if got != tt.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
			}
			if len(got) > max(tt.limit, len(tt.want)) || !utf8.ValidString(got) {
				t.Errorf("Cut(%q, %d) = %q: too long or not UTF-8", tt.in, tt.limit, got)
			}
		})
	}
}

func TestSummarizeBoundsArguments(t *testing.T) {
	long := `{"content":"` + strings.Repeat("é", 100_000) + `"}`
	tests := []struct {
		name string
		args string
		want string // "" when the arguments must be cut
	}{
		{"short", `{"file_path":"a.txt"}`, `{"file_path":"a.txt"}`},
		{"exactly the limit", `"` + strings.Repeat("x", session.MaxSummaryArgs-2) + `"`, `"` + strings.Repeat("x", session.MaxSummaryArgs-2) + `"`},
		{"long", long, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := time.Date(2026, 7, 28, 10, 0, 0, 5, time.UTC)
			sum := session.Summarize(session.ToolInvoked{
				CallID: "c1", Tool: "write_file", Args: json.RawMessage(tt.args),
				Success: false, ErrorClass: "policy", Message: tt.args, Text: tt.args, Started: started, Duration: time.Millisecond,
			})
			switch {
			case len(sum.Args) > session.MaxSummaryArgs:
				t.Fatalf("kept %d bytes of arguments, want at most %d", len(sum.Args), session.MaxSummaryArgs)
			case !utf8.ValidString(sum.Args):
				t.Fatal("cut inside a character")
			case tt.want != "" && sum.Args != tt.want:
				t.Fatalf("args %q, want %q", sum.Args, tt.want)
			case tt.want == "" && !strings.HasSuffix(sum.Args, fmt.Sprintf("…[cut: %d bytes]", len(long))):
				t.Fatalf("args end %q, want the cut marker with the full length", sum.Args[len(sum.Args)-40:])
			case sum.Message != sum.Args:
				t.Fatalf("message %q, want it cut as the arguments are: %q", sum.Message, sum.Args)
			}
			data, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			var back session.CallSummary
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !back.Started.Equal(sum.Started) || back.Tool != "write_file" || back.ErrorClass != "policy" ||
				back.Args != sum.Args || back.Message != sum.Message || back.Duration != time.Millisecond || back.CallID != "c1" || back.Success {
				t.Fatalf("round trip: %+v, want %+v", back, sum)
			}
		})
	}
}
