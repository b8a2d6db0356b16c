package session_test

import (
	"errors"
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

// listKey is a slice whose codec stores it as blobs of its own once it
// holds more than two items: one blob per item and one naming them.
var listKey = session.NewKey[[]string]("test.list")

func TestSliceStoredAsBlobsOfItsOwn(t *testing.T) {
	r := session.NewRegistry()
	session.Persist(r, noteKey, session.JSON[*note]())
	c := session.JSON[[]string]()
	c.Store = func(v []string, prev *[]string, put func(string, []byte)) (string, error) {
		if len(v) <= 2 {
			return "", nil
		}
		b := []byte(strings.Join(v, "\n"))
		put("h-"+string(b), b)
		return "h-" + string(b), nil
	}
	c.Load = func(h string, get func(string) ([]byte, error)) ([]string, error) {
		b, err := get(h)
		return strings.Split(string(b), "\n"), err
	}
	session.Persist(r, listKey, c)
	s, _ := r.NewSession("a")
	blobs := map[string][]byte{}
	put := func(h string, b []byte) { blobs[h] = b }
	get := func(h string) ([]byte, error) {
		b, ok := blobs[h]
		if !ok {
			return nil, errors.New("no blob " + h)
		}
		return b, nil
	}
	for _, tc := range []struct {
		v    []string
		own  bool
		load bool
	}{
		{[]string{"a"}, false, false},
		{[]string{"a", "b", "c"}, true, true},
	} {
		h, own, err := s.StoreSlice("test.list", tc.v, nil, put)
		if err != nil || own != tc.own {
			t.Fatalf("StoreSlice(%q) = %q, %v, %v; want own %v", tc.v, h, own, err, tc.own)
		}
		if !own {
			continue
		}
		b, _ := r.NewSession("b")
		if err := b.LoadSlice("test.list", h, get); err != nil {
			t.Fatal(err)
		}
		if got, _ := session.Get(b, listKey); !slices.Equal(got, tc.v) {
			t.Fatalf("loaded %q, want %q", got, tc.v)
		}
	}
	if _, own, err := s.StoreSlice("test.note", &note{}, nil, put); own || err != nil {
		t.Fatalf("a slice without Store: own %v, %v", own, err)
	}
	for name, h := range map[string]string{"test.note": "x", "test.none": "x", "test.list": "missing"} {
		if err := s.LoadSlice(name, h, get); err == nil {
			t.Errorf("LoadSlice(%s, %s) succeeded", name, h)
		}
	}
}
