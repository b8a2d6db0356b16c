package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// patience is how long a test waits for the server to do what a limit
// makes it do; it only turns a missing limit into a failure.
const patience = 10 * time.Second

// dial opens a raw connection to the server.
func (s *server) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.host())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a request over c and reads its response whole.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, req string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// healthz is a request for /healthz on a keep-alive connection.
const healthz = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

// awaitClose reads from c until the server closes it; the test fails if
// it is still open after patience.
func awaitClose(t *testing.T, c net.Conn, r io.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after %v", patience)
	}
}

// TestSlowBodyIsCut: a body trickling in a byte at a time gets 408 once
// --read-timeout has passed, and its connection is closed.
func TestSlowBodyIsCut(t *testing.T) {
	s := serveHTTP(t, "--store", "memory", "--read-timeout", "500ms")
	c := s.dial(t)
	if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(patience))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
	awaitClose(t, c, br)
}

// TestIdleConnectionIsClosed: a keep-alive connection without a further
// request is closed after --idle-timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	s := serveHTTP(t, "--store", "memory", "--idle-timeout", "500ms")
	c := s.dial(t)
	br := bufio.NewReader(c)
	if resp := roundTrip(t, c, br, healthz); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz: status %d, close %v", resp.StatusCode, resp.Close)
	}
	awaitClose(t, c, br)
}

// TestConnectionCap: with --max-connections 2 and two connections open, a
// third is not served until one of them closes.
func TestConnectionCap(t *testing.T) {
	s := serveHTTP(t, "--store", "memory", "--max-connections", "2")
	var open []net.Conn
	for range 2 {
		c := s.dial(t)
		if resp := roundTrip(t, c, bufio.NewReader(c), healthz); resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: status %d", resp.StatusCode)
		}
		open = append(open, c)
	}
	third := s.dial(t)
	if _, err := io.WriteString(third, healthz); err != nil {
		t.Fatal(err)
	}
	third.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a third connection was served while two were open")
	}
	open[0].Close()
	third.SetReadDeadline(time.Now().Add(patience))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the third connection got no answer once one closed: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("third: status %d", resp.StatusCode)
	}
}

// TestQuietStreamEnds: a stream that carries nothing, with no request of
// its session, ends after --session-ttl, the legacy SSE transport's (GET
// /sse) and a Streamable HTTP session's standalone stream (GET /mcp)
// alike.
func TestQuietStreamEnds(t *testing.T) {
	s := serveHTTP(t, "--store", "memory", "--session-ttl", "1s")
	t.Run("sse", func(t *testing.T) {
		c := s.dial(t)
		if _, err := io.WriteString(c, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		expectStream(t, c)
	})
	t.Run("streamable", func(t *testing.T) {
		hc := &httpClient{url: s.url}
		hc.initialize(t)
		c := s.dial(t)
		if _, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: "+hc.sid+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		expectStream(t, c)
	})
}

// expectStream reads the response to a GET of a stream on c: an SSE
// stream, which the server ends.
func expectStream(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	awaitClose(t, c, resp.Body)
}

// TestStreamOutlivesReadTimeout: --read-timeout bounds the reading of a
// request's body, not its response: a call that waits on the client (an
// elicitation answered after the read timeout) still answers on the
// stream of its POST.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	s := serveHTTP(t, "--store", "memory", "--conformance", "--read-timeout", "300ms")
	c := &httpClient{url: s.url}
	c.post(t, "initialize", "", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "wink-e2e", "version": "1"}})
	if resp := c.postRaw(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: status %d", resp.StatusCode)
	}
	call := c.postRaw(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"who?"}}}`)
	defer call.Body.Close()
	if call.StatusCode != http.StatusOK || call.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("call: status %d, Content-Type %q", call.StatusCode, call.Header.Get("Content-Type"))
	}
	events := bufio.NewScanner(call.Body)
	next := func() map[string]any {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok && data != "" {
				var msg map[string]any
				if err := json.Unmarshal([]byte(data), &msg); err != nil {
					t.Fatal(err)
				}
				return msg
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return nil
	}
	ask := next()
	if ask["method"] != "elicitation/create" {
		t.Fatalf("first message %v, want elicitation/create", ask)
	}
	time.Sleep(time.Second)
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ask["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"username": "ann", "email": "ann@example.com"}}})
	if resp := c.postRaw(t, string(answer)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("answer: status %d", resp.StatusCode)
	}
	if res := next(); res["id"] != float64(1) || !strings.Contains(fmt.Sprint(res["result"]), "ann@example.com") {
		t.Errorf("response %v", res)
	}
}

// postRaw posts a JSON-RPC message in c's legacy session and returns the
// response, its body unread.
func (c *httpClient) postRaw(t *testing.T, msg string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
