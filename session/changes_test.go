package session_test

import (
	"slices"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

// files is a resource whose snapshots report fixed changes and which
// keeps files outside the state.
type files struct{ changed []string }

func (f *files) Snapshot() (session.Restorer, error) { return f, nil }
func (f *files) Restore() error                      { return nil }
func (f *files) Release()                            {}
func (f *files) Changes() ([]session.FileChange, error) {
	var out []session.FileChange
	for _, p := range f.changed {
		out = append(out, session.FileChange{Path: p, Exists: true, Outside: true})
	}
	return out, nil
}
func (f *files) File(string) ([]byte, bool, bool, error) { return nil, false, false, nil }
func (f *files) PutFile(string, []byte, bool) error      { return nil }
func (f *files) PutDir(string, bool) error               { return nil }

// TestTxChanges: a transaction reports the changes of the resources that
// tell them and the slices as they were at Begin; ReplaceSlices makes the
// session's state a given set of values, which Rollback undoes.
func TestTxChanges(t *testing.T) {
	r := session.NewRegistry()
	ka, kb := session.NewKey[string]("a"), session.NewKey[string]("b")
	session.Provide(r, session.NewResourceKey[*files]("x"), func(*session.Session) (*files, error) { return &files{changed: []string{"p", "q"}}, nil })
	session.Provide(r, session.NewResourceKey[*files]("y"), func(*session.Session) (*files, error) { return &files{changed: []string{"r"}}, nil })
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(session.FilesOf(s)); got != 2 {
		t.Errorf("FilesOf: %d resources, want 2", got)
	}
	session.Set(s, ka, "before")
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	session.Set(s, ka, "after")
	changes, err := tx.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	if !slices.Equal(paths, []string{"p", "q", "r"}) {
		t.Errorf("changes %v", paths)
	}
	if got := tx.Before()["a"]; got != "before" {
		t.Errorf("Before: a = %v", got)
	}
	s.ReplaceSlices(map[string]any{"b": "only"})
	if _, ok := session.Get(s, ka); ok {
		t.Error("a survived ReplaceSlices")
	}
	if v, _ := session.Get(s, kb); v != "only" {
		t.Errorf("b = %q", v)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if v, _ := session.Get(s, ka); v != "before" {
		t.Errorf("after Rollback, a = %q", v)
	}

	read, err := s.BeginRead()
	if err != nil {
		t.Fatal(err)
	}
	defer read.Rollback()
	if c, err := read.Changes(); err != nil || c != nil || read.Before() != nil {
		t.Errorf("a read-only transaction reports %v, %v, %v", c, err, read.Before())
	}
}

// TestSliceText: a slice reads as its codec's Text, or as indented JSON;
// a Text that is empty hides the slice; a slice without a value is "".
func TestSliceText(t *testing.T) {
	type point struct{ X, Y int }
	r := session.NewRegistry()
	session.Persist(r, session.NewKey[point]("json"), session.JSON[point]())
	text := session.JSON[point]()
	text.Text = func(p point) string { return "x is " + string(rune('0'+p.X)) }
	session.Persist(r, session.NewKey[point]("text"), text)
	quiet := session.JSON[point]()
	quiet.Text = func(point) string { return "" }
	session.Persist(r, session.NewKey[point]("quiet"), quiet)
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"json": point{1, 2}, "text": point{3, 4}, "quiet": point{5, 6}}
	for _, tc := range []struct{ name, want string }{
		{"json", "{\n  \"X\": 1,\n  \"Y\": 2\n}\n"},
		{"text", "x is 3\n"},
		{"quiet", ""},
		{"absent", ""},
	} {
		if got, err := s.SliceText(tc.name, values); err != nil || got != tc.want {
			t.Errorf("SliceText(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestChangedSlices: a slice changed when its text differs, whether it was
// added, removed or given another value; a slice whose text is the same,
// or that holds the same value, did not change; the changes come sorted.
func TestChangedSlices(t *testing.T) {
	type point struct{ X, Y int }
	r := session.NewRegistry()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		session.Persist(r, session.NewKey[point](name), session.JSON[point]())
	}
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	same := &struct{}{}
	before := map[string]any{"a": point{1, 1}, "b": point{2, 2}, "c": point{3, 3}, "e": same}
	after := map[string]any{"a": point{1, 1}, "b": point{2, 9}, "d": point{4, 4}, "e": same}
	got, err := s.ChangedSlices(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []session.SliceChange{
		{Name: "b", Before: "{\n  \"X\": 2,\n  \"Y\": 2\n}\n", After: "{\n  \"X\": 2,\n  \"Y\": 9\n}\n"},
		{Name: "c", Before: "{\n  \"X\": 3,\n  \"Y\": 3\n}\n"},
		{Name: "d", After: "{\n  \"X\": 4,\n  \"Y\": 4\n}\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ChangedSlices = %q; want %q", got, want)
	}
}
