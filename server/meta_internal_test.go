package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestReadMetaRenamesFormerKeysAndLogsOnce(t *testing.T) {
	var buf bytes.Buffer
	s := &Server{logger: slog.New(slog.NewTextHandler(&buf, nil))}
	for _, tc := range []struct {
		in   map[string]any
		want any
	}{
		{map[string]any{"io.wink-mcp/timeoutMs": 5.0}, 5.0},
		{map[string]any{"io.wink-mcp/timeoutMs": 7.0}, 7.0},
		{map[string]any{"io.wink-mcp/timeoutMs": 7.0, MetaTimeoutMs: 9.0}, 9.0},
		{map[string]any{MetaTimeoutMs: 3.0}, 3.0},
	} {
		got := s.readMeta(context.Background(), tc.in)
		if got[MetaTimeoutMs] != tc.want || len(got) != 1 {
			t.Errorf("readMeta(%v) = %v, want only %s: %v", tc.in, got, MetaTimeoutMs, tc.want)
		}
	}
	if n := strings.Count(buf.String(), "deprecated _meta key"); n != 1 {
		t.Errorf("logged the deprecation %d times, want once:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "key=io.wink-mcp/timeoutMs use=io.github.wink-mcp/timeoutMs") {
		t.Errorf("log does not name the keys:\n%s", buf.String())
	}
}
