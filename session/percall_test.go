package session_test

import (
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

type closer struct{ closed *int }

func (c closer) Close() error { *c.closed++; return nil }

// TestPerCallResources checks that a per-call resource is created once per
// transaction, shared within it, and closed when the transaction ends,
// whether it commits or rolls back.
func TestPerCallResources(t *testing.T) {
	r := session.NewRegistry()
	key := session.NewResourceKey[closer]("conn")
	created, closed := 0, 0
	session.ProvidePerCall(r, key, func(*session.Session) (closer, error) {
		created++
		return closer{&closed}, nil
	})
	s, err := r.NewSession("s")
	if err != nil {
		t.Fatal(err)
	}
	for i, commit := range []bool{true, false} {
		tx, err := s.Begin()
		if err != nil {
			t.Fatal(err)
		}
		a, err := session.CallResource(tx, key)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := session.CallResource(tx, key)
		if a.closed != b.closed || created != i+1 {
			t.Fatalf("call %d: created %d resources, want %d shared within the call", i, created, i+1)
		}
		if commit {
			tx.Commit()
		} else if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if closed != i+1 {
			t.Errorf("call %d: closed %d, want %d", i, closed, i+1)
		}
	}
	if _, err := session.CallResource(mustBegin(t, s), session.NewResourceKey[int]("missing")); err == nil {
		t.Error("an unregistered resource was found")
	}
}

func mustBegin(t *testing.T, s *session.Session) *session.Tx {
	t.Helper()
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return tx
}
