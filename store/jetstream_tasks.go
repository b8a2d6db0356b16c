package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// PutTask implements Store, with a per-message time to live and the same
// compare-and-swap a head's commit makes. A write sent again after a lost
// answer is recognised by its id.
func (s *JetStream) PutTask(ctx context.Context, owner, id string, rev uint64, record []byte, keep time.Duration) (uint64, error) {
	if err := checkTask(owner, id); err != nil {
		return 0, err
	}
	if err := checkValue("task record", record); err != nil {
		return 0, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	subject := s.taskSubject(owner, id)
	msgID := nuid.Next()
	// The server counts a time to live in whole seconds.
	ttl := max(keep, minKeep).Round(time.Second)
	var out uint64
	refusals := 0
	err := retry(ctx, func(ctx context.Context) (bool, error) {
		ack, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: record},
			jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgID(msgID), jetstream.WithMsgTTL(ttl))
		if err == nil {
			out = ack.Sequence
			return true, nil
		}
		cur, gerr := last(ctx, s.tasks, subject)
		switch {
		case gerr == nil && cur.Header.Get(jetstream.MsgIDHeader) == msgID:
			out = cur.Sequence
			return true, nil
		case gerr == nil && cur.Sequence != rev, errors.Is(gerr, ErrNotFound) && rev != 0:
			return true, fmt.Errorf("store: task %s at %d: %w", id, rev, ErrConflict)
		case gerr == nil || errors.Is(gerr, ErrNotFound):
			// At rev, so not applied: send it again, unless the server
			// keeps refusing.
			var api *jetstream.APIError
			if errors.As(err, &api) {
				if refusals++; refusals == maxRefusals {
					return true, err
				}
			}
		}
		return s.nc.IsClosed(), err
	})
	if err != nil && !errors.Is(err, ErrConflict) {
		return 0, fail("put task", id, err)
	}
	return out, err
}

// Task implements Store.
func (s *JetStream) Task(ctx context.Context, owner, id string) ([]byte, uint64, error) {
	if err := checkTask(owner, id); err != nil {
		return nil, 0, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	var m *jetstream.RawStreamMsg
	err := s.do(ctx, func(ctx context.Context) (err error) {
		m, err = last(ctx, s.tasks, s.taskSubject(owner, id))
		return err
	})
	if err != nil {
		return nil, 0, fail("task", id, err)
	}
	return m.Data, m.Sequence, nil
}

// Tasks implements Store, with an ordered consumer of the last message of
// each of owner's task subjects.
func (s *JetStream) Tasks(ctx context.Context, owner string) ([][]byte, error) {
	if err := checkTask(owner, "_"); err != nil {
		return nil, err
	}
	ctx, cancel := s.begin(ctx)
	defer cancel()
	var out [][]byte
	err := s.scan(ctx, s.tasks, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.taskSubject(owner, "*")},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}, 0, func() { out = out[:0] }, func(m jetstream.Msg, _ *jetstream.MsgMetadata) {
		out = append(out, m.Data())
	})
	if err != nil {
		return nil, fail("list tasks", owner, err)
	}
	return out, nil
}
