package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// host returns the server's listen address.
func (s *server) host() string {
	return strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
}

// TestMetricsNeedToken: with bearer tokens on, /metrics answers 401
// without one, and the metrics with one; /healthz stays open.
func TestMetricsNeedToken(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("token-of-alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveHTTP(t, "--store", "memory", "--bearer-token-file", tokens)
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.host()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: status %d, want 401", code)
	}
	if code, _ := get("/metrics", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong token: status %d, want 401", code)
	}
	if code, body := get("/metrics", "token-of-alice"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics with a token: status %d, body %.200q", code, body)
	}
	if code, _ := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without a token: status %d, want 200", code)
	}
}
