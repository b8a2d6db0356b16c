package tools_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// plan renders itself through a pointer receiver.
type plan struct{ Steps []string }

func (p *plan) Render() string { return "plan: " + strings.Join(p.Steps, ", ") }

// label renders itself through a value receiver.
type label string

func (l label) Render() string { return "<" + string(l) + ">" }

type point struct {
	X int `json:"x"`
	Y int `json:"y,omitempty"`
}

func TestOutcomeText(t *testing.T) {
	var nilPlan *plan
	var nilMap map[string]int
	var nilSlice []string
	tests := []struct {
		name string
		o    tools.Outcome
		want string
	}{
		{"message and value", tools.Outcome{Success: true, Message: "Done.", Value: point{X: 1}}, "Done.\n\n{\"x\":1}"},
		{"message only", tools.Outcome{Success: true, Message: "Done."}, "Done."},
		{"value only", tools.Outcome{Success: true, Value: point{X: 1, Y: 2}}, `{"x":1,"y":2}`},
		{"neither", tools.Outcome{}, ""},
		{"empty slice renders []", tools.Outcome{Success: true, Message: "None.", Value: []point{}}, "None.\n\n[]"},
		{"nil slice renders []", tools.Outcome{Success: true, Message: "None.", Value: nilSlice}, "None.\n\n[]"},
		{"empty slice alone", tools.Outcome{Success: true, Value: []string{}}, "[]"},
		{"nil pointer renders nothing", tools.Outcome{Success: true, Message: "No plan.", Value: nilPlan}, "No plan."},
		{"nil map renders nothing", tools.Outcome{Success: true, Message: "M.", Value: nilMap}, "M."},
		{"empty map renders {}", tools.Outcome{Success: true, Message: "M.", Value: map[string]int{}}, "M.\n\n{}"},
		{"Render through a pointer", tools.Outcome{Success: true, Message: "Plan:", Value: &plan{Steps: []string{"a", "b"}}}, "Plan:\n\nplan: a, b"},
		{"Render through a value", tools.Outcome{Success: true, Message: "L", Value: label("x")}, "L\n\n<x>"},
		{"Render returning nothing", tools.Outcome{Success: true, Message: "L", Value: label("")}, "L\n\n<>"},
		{"string value is JSON", tools.Outcome{Success: true, Message: "S", Value: "hi"}, "S\n\n\"hi\""},
		{"number value", tools.Outcome{Success: true, Value: 42}, "42"},
		{"slice of structs", tools.Outcome{Success: true, Value: []point{{X: 1}, {X: 2}}}, `[{"x":1},{"x":2}]`},
		{"HTML is not escaped away", tools.Outcome{Success: true, Value: map[string]string{"a": "<b>"}}, `{"a":"\u003cb\u003e"}`},
		{"excluded value left out", tools.Outcome{Success: true, Message: "Saved.", Value: point{X: 1}, Exclude: true}, "Saved."},
		{"excluded value with no message", tools.Outcome{Success: true, Value: point{X: 1}, Exclude: true}, ""},
		{"excluded renderer left out", tools.Outcome{Success: true, Message: "P", Value: &plan{}, Exclude: true}, "P"},
		{"failed call renders its message only", tools.Outcome{Message: "Step 3 does not exist.", Value: point{X: 1}}, "Step 3 does not exist."},
		{"failed call with an empty slice", tools.Outcome{Message: "Failed.", Value: []int{}}, "Failed."},
		{"unrenderable value", tools.Outcome{Success: true, Message: "C", Value: make(chan int)}, "C\n\n<unrenderable value: json: unsupported type: chan int>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if got := o.Text(); got != tt.want {
				t.Errorf("Text() = %q, want %q", got, tt.want)
			}
			if got := o.Text(); got != tt.want {
				t.Errorf("second Text() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderValue(t *testing.T) {
	var nilPlan *plan
	var nilIface any
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil", nilIface, ""},
		{"nil pointer with Render", nilPlan, ""},
		{"nil pointer", (*point)(nil), ""},
		{"pointer", &point{X: 3}, `{"x":3}`},
		{"empty slice", []int{}, "[]"},
		{"bool", false, "false"},
		{"renderer", label("r"), "<r>"},
	}
	for _, tt := range tests {
		if got := tools.RenderValue(tt.v); got != tt.want {
			t.Errorf("%s: RenderValue(%#v) = %q, want %q", tt.name, tt.v, got, tt.want)
		}
	}
}

func TestResultHelpers(t *testing.T) {
	ok := tools.OK("fine", 3)
	if !ok.Success || ok.Message != "fine" || ok.Value != 3 {
		t.Errorf("OK = %+v", ok)
	}
	f := tools.Fail[int]("nope")
	if f.Success || f.Message != "nope" || f.Value != 0 {
		t.Errorf("Fail = %+v", f)
	}
	ff := tools.Failf[string]("step %d of %s", 2, "x")
	if ff.Success || ff.Message != "step 2 of x" {
		t.Errorf("Failf = %+v", ff)
	}
	o := tools.Failure(tools.ClassPolicy, "denied")
	if o.Success || o.Class != tools.ClassPolicy || o.Text() != "denied" {
		t.Errorf("Failure = %+v", o)
	}
}

// renderString is a value whose Render returns a fuzzed string.
type renderString string

func (r renderString) Render() string { return string(r) }

// FuzzRender checks that Text never panics, always starts with the message,
// and joins message and value as the specification says.
func FuzzRender(f *testing.F) {
	f.Add("Done.", "value", false, false, true)
	f.Add("", "", true, false, true)
	f.Add("msg", "", false, true, true)
	f.Add("\n\n", "\n", true, true, false)
	f.Add("\xff\xfe", "\x00", false, false, true)
	f.Add("Failed.", "value", true, false, false)
	f.Fuzz(func(t *testing.T, msg, val string, asRenderer, exclude, success bool) {
		var v any = val
		if asRenderer {
			v = renderString(val)
		}
		o := &tools.Outcome{Message: msg, Value: v, Exclude: exclude, Success: success}
		text := o.Text()
		if !strings.HasPrefix(text, msg) {
			t.Fatalf("Text() = %q does not start with the message %q", text, msg)
		}
		rendered := tools.RenderValue(v)
		var want string
		switch {
		case exclude || !success || rendered == "":
			want = msg
		case msg == "":
			want = rendered
		default:
			want = msg + "\n\n" + rendered
		}
		if text != want {
			t.Fatalf("Text() = %q, want %q", text, want)
		}
		if asRenderer && success && !exclude && !strings.HasSuffix(text, val) {
			t.Fatalf("Text() = %q does not end with the rendered value %q", text, val)
		}
	})
}

// TestAddFeedback: feedback goes after the content there is, and never
// into the array of another outcome that shares it.
func TestAddFeedback(t *testing.T) {
	cached := &tools.Outcome{Message: "m", Content: append(make([]mcp.Content, 0, 4), mcp.NewTextContent("image"))}
	served := *cached
	served.AddFeedback("The plan has 2 pending steps.")
	served.AddFeedback("3 minutes to the deadline.")
	var got []string
	for _, c := range served.Content {
		got = append(got, c.(mcp.TextContent).Text)
	}
	if want := []string{"image", "The plan has 2 pending steps.", "3 minutes to the deadline."}; !slices.Equal(got, want) {
		t.Errorf("content %q, want %q", got, want)
	}
	if len(cached.Content) != 1 || cached.Content[:2][1] != nil {
		t.Error("the feedback went into the shared outcome's content")
	}
}
