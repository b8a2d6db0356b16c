package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/store"
)

// A Question is a question for a person that no client could put to them
// (a consent question): it waits in the store, where any process's
// console finds it, until the person answers or the call that asks stops
// waiting.
type Question struct {
	ID string `json:"id"`
	// Session is the handle of the session of the call that asks.
	Session string `json:"session"`
	// Tool is the tool of the call, Message what the person is asked.
	Tool    string `json:"tool"`
	Message string `json:"message"`
	// Asked is when the question was put; Until is when the call stops
	// waiting for its answer.
	Asked time.Time `json:"asked"`
	Until time.Time `json:"until"`
	// Answer is "accept" or "decline" once answered.
	Answer string `json:"answer,omitempty"`
}

// The answers to a Question.
const (
	Accept  = "accept"
	Decline = "decline"
)

// askEvery is how often a call that waits for an answer reads its
// question again.
const askEvery = 200 * time.Millisecond

// ErrNoQuestion is the error of Answer for a question that is not waiting
// (never asked, answered already, or no longer waited for).
var ErrNoQuestion = errors.New("no such question waits for an answer")

// questionsOf is the key under which the store keeps the questions of
// owner's sessions: apart from the tasks of anyone.
func questionsOf(owner string) string {
	sum := sha256.Sum256([]byte("questions\x00" + owner))
	return "q" + hex.EncodeToString(sum[:16])
}

// Ask puts q, a question of a call of owner's session q.Session, in the
// store and waits until a person answers it (Answer) or ctx ends, and
// reports whether they accepted. q.Until is ctx's deadline.
func (m *Manager) Ask(ctx context.Context, owner string, q Question) (bool, error) {
	q.ID, q.Asked, q.Answer = rand.Text(), m.now(), ""
	deadline, ok := ctx.Deadline()
	if !ok {
		return false, errors.New("sessions: a question needs a deadline")
	}
	q.Until = deadline
	b, err := json.Marshal(q)
	if err != nil {
		return false, err
	}
	key := questionsOf(owner)
	// Kept a little past its deadline, for the console to show it ended.
	if _, err := m.store.PutTask(ctx, key, q.ID, 0, b, time.Until(deadline)+time.Minute); err != nil {
		return false, StoreError{err}
	}
	t := time.NewTicker(askEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
		rec, _, err := m.store.Task(ctx, key, q.ID)
		if err != nil {
			continue // the store may be back before the deadline
		}
		var got Question
		if json.Unmarshal(rec, &got) == nil && got.Answer != "" {
			return got.Answer == Accept, nil
		}
	}
}

// Questions returns the questions of owner's sessions that wait for an
// answer, the oldest first.
func (m *Manager) Questions(ctx context.Context, owner string) ([]Question, error) {
	recs, err := m.store.Tasks(ctx, questionsOf(owner))
	if err != nil {
		return nil, StoreError{err}
	}
	now := m.now()
	var out []Question
	for _, r := range recs {
		var q Question
		if json.Unmarshal(r, &q) == nil && q.Answer == "" && now.Before(q.Until) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b Question) int { return a.Asked.Compare(b.Asked) })
	return out, nil
}

// Answer answers the question id of owner's sessions, once: accept or
// decline.
func (m *Manager) Answer(ctx context.Context, owner, id string, accept bool) error {
	key := questionsOf(owner)
	rec, rev, err := m.store.Task(ctx, key, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return ErrNoQuestion
	}
	if err != nil {
		return StoreError{err}
	}
	var q Question
	if err := json.Unmarshal(rec, &q); err != nil {
		return fmt.Errorf("question %s: %w", id, err)
	}
	if q.Answer != "" || !m.now().Before(q.Until) {
		return ErrNoQuestion
	}
	q.Answer = Decline
	if accept {
		q.Answer = Accept
	}
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	switch _, err := m.store.PutTask(ctx, key, id, rev, b, time.Minute); {
	case errors.Is(err, store.ErrConflict):
		return ErrNoQuestion // answered meanwhile
	case err != nil:
		return StoreError{err}
	}
	return nil
}
