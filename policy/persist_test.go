package policy

import (
	"slices"
	"testing"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/session"
)

// roundTrip stores every STATE slice of from and loads them into a new
// session, and returns the bytes each slice was stored as.
func roundTrip(t *testing.T, r *session.Registry, from *session.Session) (*session.Session, map[string]string) {
	t.Helper()
	to, err := r.NewSession("to")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for name, v := range from.Slices() {
		b, err := from.MarshalSlice(name, v)
		if err != nil {
			t.Fatal(err)
		}
		stored[name] = string(b)
		if err := to.UnmarshalSlice(name, b); err != nil {
			t.Fatal(err)
		}
	}
	return to, stored
}

func TestPolicyMemoryRoundTrips(t *testing.T) {
	r := session.NewRegistry()
	Persist(r)
	tests := []struct {
		name  string
		paths [][2]string
		tools []string
	}{
		{"empty", nil, nil},
		{"some", [][2]string{{"b.txt", "v2"}, {"a/c.txt", "v1"}}, []string{"test", "build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, _ := r.NewSession("from")
			var m merkle.Map[string]
			for _, p := range tt.paths {
				m = m.Set(p[0], p[1])
			}
			session.Set(from, known, m)
			session.Set(from, succeeded, immutable.NewSet(nil, tt.tools...))
			to, _ := roundTrip(t, r, from)
			gotM, _ := session.Get(to, known)
			if gotM.Len() != len(tt.paths) {
				t.Fatalf("%d paths, want %d", gotM.Len(), len(tt.paths))
			}
			for _, p := range tt.paths {
				if v, _ := gotM.Get(p[0]); v != p[1] {
					t.Fatalf("%s: version %q, want %q", p[0], v, p[1])
				}
			}
			gotS, _ := session.Get(to, succeeded)
			got := gotS.Items()
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.tools))
			if !slices.Equal(got, want) {
				t.Fatalf("tools %v, want %v", got, want)
			}
		})
	}
}

// TestPolicyMemoryIsStoredDeterministically: equal memories built in
// different orders are stored as the same bytes, so they share one blob.
func TestPolicyMemoryIsStoredDeterministically(t *testing.T) {
	r := session.NewRegistry()
	Persist(r)
	a, _ := r.NewSession("a")
	b, _ := r.NewSession("b")
	names := []string{"x", "y", "z", "w", "v"}
	var ma, mb merkle.Map[string]
	for i := range names {
		ma = ma.Set(names[i], "v"+names[i])
		mb = mb.Set(names[len(names)-1-i], "v"+names[len(names)-1-i])
	}
	session.Set(a, known, ma)
	session.Set(b, known, mb)
	session.Set(a, succeeded, immutable.NewSet(nil, names...))
	session.Set(b, succeeded, immutable.NewSet(nil, reversed(names)...))
	_, sa := roundTrip(t, r, a)
	_, sb := roundTrip(t, r, b)
	for name := range sa {
		if sa[name] != sb[name] {
			t.Errorf("%s: stored %s and %s", name, sa[name], sb[name])
		}
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
