package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official Go SDK's client (v1.8.0), in its default mode: protocol
// 2026-07-28, discovered with server/discover, no initialize and no
// protocol session. Pinned to 2025-11-25 it is a legacy client.

// sdkClient calls tools through a go-sdk client session.
type sdkClient struct {
	cs *mcp.ClientSession
}

func (c sdkClient) call(t testing.TB, tool string, args map[string]any) result {
	t.Helper()
	r, _ := c.callRaw(t, tool, args)
	return r
}

// callRaw is call, also returning the result as the SDK gives it, in JSON.
func (c sdkClient) callRaw(t testing.TB, tool string, args map[string]any) (result, json.RawMessage) {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r, raw
}

// connectSDK connects a go-sdk client over t, in its default mode or
// pinned to version, and checks the version it speaks.
func connectSDK(t *testing.T, tr mcp.Transport, version string) sdkClient {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "wink-e2e-sdk", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(t.Context(), tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	want := version
	if want == "" {
		want = "2026-07-28"
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("protocol %s, want %s", got, want)
	}
	return sdkClient{cs}
}

// TestGoSDKOverStdio: the SDK's default client keeps a plan and a
// workspace over stdio, by handle and without it (the process is one
// client); pinned to 2025-11-25 it does too.
func TestGoSDKOverStdio(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		implicit      bool
	}{
		{"default by handle", "", false},
		{"default", "", true},
		{"2025-11-25", "2025-11-25", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, "--state-dir", t.TempDir())
			cmd.Dir = t.TempDir()
			c := connectSDK(t, &mcp.CommandTransport{Command: cmd}, tc.version)
			keepState(t, c, tc.implicit)
			badHandles(t, c)
		})
	}
}

// TestGoSDKOverHTTP: the SDK's default client keeps a plan and a workspace
// over HTTP by the handle its first call returns; without it, a read is
// refused. Pinned to 2025-11-25, it keeps them in its protocol session.
func TestGoSDKOverHTTP(t *testing.T) {
	s := serveHTTP(t)
	t.Run("default", func(t *testing.T) {
		c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "")
		keepState(t, c, false)
		if r := c.call(t, "planning_read_plan", map[string]any{}); !r.IsError || r.text() != noSession {
			t.Errorf("a read without a handle: %+v", r)
		}
		badHandles(t, c)
	})
	t.Run("2025-11-25", func(t *testing.T) {
		c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "2025-11-25")
		keepState(t, c, true)
	})
}
