package session_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/session"
)

type note struct {
	Text string `json:"text"`
}

var noteKey = session.NewKey[*note]("test.note")

func TestSliceRoundTripsThroughItsCodec(t *testing.T) {
	r := session.NewRegistry()
	session.Persist(r, noteKey, session.JSON[*note]())
	a, _ := r.NewSession("a")
	session.Set(a, noteKey, &note{Text: "hello"})
	data, err := a.MarshalSlice(noteKey.Name(), a.Slices()[noteKey.Name()])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.NewSession("b")
	if err := b.UnmarshalSlice(noteKey.Name(), data); err != nil {
		t.Fatal(err)
	}
	if got, _ := session.Get(b, noteKey); got == nil || got.Text != "hello" {
		t.Fatalf("got %+v, want hello", got)
	}
}

func TestUndeclaredSliceIsAnError(t *testing.T) {
	r := session.NewRegistry()
	s, _ := r.NewSession("a")
	if _, err := s.MarshalSlice("test.none", 1); err == nil || !strings.Contains(err.Error(), "session.Persist") {
		t.Fatalf("marshal: %v, want an error naming session.Persist", err)
	}
	if err := s.UnmarshalSlice("test.none", []byte("1")); err == nil {
		t.Fatal("unmarshal of an undeclared slice succeeded")
	}
}

func TestBadStoredSliceIsAnError(t *testing.T) {
	r := session.NewRegistry()
	session.Persist(r, noteKey, session.JSON[*note]())
	s, _ := r.NewSession("a")
	if err := s.UnmarshalSlice(noteKey.Name(), []byte("{")); err == nil {
		t.Fatal("unmarshal of bad bytes succeeded")
	}
	if _, ok := session.Get(s, noteKey); ok {
		t.Fatal("a failed unmarshal set the slice")
	}
}

func TestDeclaringASliceTwicePanics(t *testing.T) {
	r := session.NewRegistry()
	session.Persist(r, noteKey, session.JSON[*note]())
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	session.Persist(r, noteKey, session.JSON[*note]())
}

func TestResourcesListsPerSessionOnesInOrder(t *testing.T) {
	r := session.NewRegistry()
	session.Provide(r, session.NewResourceKey[string]("b"), func(*session.Session) (string, error) { return "B", nil })
	session.Share(r, session.NewResourceKey[string]("shared"), "S")
	session.Provide(r, session.NewResourceKey[string]("a"), func(*session.Session) (string, error) { return "A", nil })
	s, _ := r.NewSession("x")
	var got []string
	for name, v := range s.Resources() {
		got = append(got, name+"="+v.(string))
	}
	if want := []string{"b=B", "a=A"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
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
				Success: false, ErrorClass: "policy", Text: tt.args, Started: started, Duration: time.Millisecond,
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
				back.Args != sum.Args || back.Duration != time.Millisecond || back.CallID != "c1" || back.Success {
				t.Fatalf("round trip: %+v, want %+v", back, sum)
			}
		})
	}
}
