package transport

import (
	"context"
	"testing"
	"time"
)

// TestQuietLeft: a stream is quiet once nothing else of its session is in
// flight and the session saw no activity for the TTL; something else in
// flight keeps it open a whole TTL more.
func TestQuietLeft(t *testing.T) {
	now := time.Unix(1000, 0)
	const ttl = time.Second
	for _, tc := range []struct {
		name   string
		active int64 // begun and not ended, the stream included
		since  time.Duration
		want   time.Duration
	}{
		{"quiet", 1, 2 * time.Second, -time.Second},
		{"just quiet", 1, time.Second, 0},
		{"recent activity", 1, 400 * time.Millisecond, 600 * time.Millisecond},
		{"a call in flight", 2, time.Hour, ttl},
	} {
		s := newHTTPSession(context.Background(), "s", now.Add(-tc.since))
		s.active.Store(tc.active)
		if got := s.quietLeft(now, ttl); got != tc.want {
			t.Errorf("%s: quietLeft = %v, want %v", tc.name, got, tc.want)
		}
	}
}
