package session_test

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/session"
)

func TestLogID(t *testing.T) {
	for _, tc := range []struct{ handle, want string }{
		// printf %s s_ABCDEFGHIJKLMNOPQRSTUVWXYZ | sha256sum | cut -c1-12
		{"s_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "sid_25ec320ac7d8"},
		{"work", "sid_00e13ed7af55"},
		{"", ""},
	} {
		if got := session.LogID(tc.handle); got != tc.want {
			t.Errorf("LogID(%q) = %q, want %q", tc.handle, got, tc.want)
		}
	}
	if !regexp.MustCompile(`^sid_[0-9a-f]{12}$`).MatchString(session.LogID("s_X")) {
		t.Errorf("LogID has the wrong shape: %q", session.LogID("s_X"))
	}
}

func TestLogHandle(t *testing.T) {
	var buf bytes.Buffer
	h := "s_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	slog.New(slog.NewTextHandler(&buf, nil)).Info("call", "session", session.LogHandle(h))
	if got := buf.String(); strings.Contains(got, h) || !strings.Contains(got, "session="+session.LogID(h)) {
		t.Errorf("logged %q", got)
	}
}
