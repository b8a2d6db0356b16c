package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestGoSDKForgottenHandle: the SDK's default client over HTTP sets up a
// plan and writes a file, then calls without the handle. A call that
// changes state runs in a new session, which lacks the plan or the file:
// its error says so, and how to name the session meant; passing the
// handle then works. A read without the handle says how to name one.
func TestGoSDKForgottenHandle(t *testing.T) {
	s := serveHTTP(t)
	c := connectSDK(t, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: http.DefaultClient}, "")
	r := c.call(t, "planning_setup_plan", map[string]any{"objective": "Ship it", "initial_steps": []string{"draft"}})
	h := r.session(t)
	if r := c.call(t, "write_file", with(h, map[string]any{"file_path": "notes.md", "content": "hello\n"})); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}
	const forgot = " This call named no session, so it ran in a new one, which has no %s. To continue the session of an earlier call, pass the handle from the line 'Session: s_…' of its result as `session`."
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"planning_update_step", map[string]any{"step_id": 1, "status": "done"}, "No plan is currently initialised." + fmt.Sprintf(forgot, "plan")},
		{"planning_add_step", map[string]any{"steps": []string{"review"}}, "No plan is currently initialised." + fmt.Sprintf(forgot, "plan")},
		{"edit_file", map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"}, "File does not exist: notes.md." + fmt.Sprintf(forgot, "notes.md in its workspace")},
		{"planning_read_plan", map[string]any{}, noSession},
	} {
		if r := c.call(t, tc.tool, tc.args); !r.IsError || r.text() != tc.want {
			t.Errorf("%s without the handle:\n got %+v\nwant %q", tc.tool, r, tc.want)
		}
	}
	if r := c.call(t, "planning_update_step", with(h, map[string]any{"step_id": 1, "status": "done"})); r.IsError {
		t.Errorf("with the handle: %+v", r)
	}
	if r := c.call(t, "edit_file", with(h, map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"})); r.IsError {
		t.Errorf("with the handle: %+v", r)
	}
}
