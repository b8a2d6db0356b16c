package identity

import (
	"context"
	"testing"
)

func TestWithFrom(t *testing.T) {
	if _, ok := From(context.Background()); ok {
		t.Error("identity in an empty context")
	}
	id := Identity{Subject: "alice", Scopes: []string{"read", "write"}}
	got, ok := From(With(context.Background(), id))
	if !ok || got.Subject != "alice" || !got.HasScope("write") || got.HasScope("admin") || got.Anonymous() {
		t.Errorf("From = %+v, %v", got, ok)
	}
	if !(Identity{}).Anonymous() {
		t.Error("the zero identity is not anonymous")
	}
	if l := Local(); l.Subject == "" || len(l.Scopes) != 0 {
		t.Errorf("Local() = %+v", l)
	}
}

func TestPrincipal(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		want string
	}{
		{Identity{}, ""},
		{Identity{Scopes: []string{"read"}}, ""},
		{Identity{Subject: "alice", Scopes: []string{"read"}}, "subject:alice"},
		{Identity{Credential: "ab12"}, "credential:ab12"},
	} {
		if got := tc.id.Principal(); got != tc.want {
			t.Errorf("%+v.Principal() = %q, want %q", tc.id, got, tc.want)
		}
	}
	if (Identity{Credential: "ab12"}).Anonymous() {
		t.Error("an identity with a credential is anonymous")
	}
}
