package session_test

import (
	"slices"
	"strings"
	"testing"

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
