package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// failsafe bounds every wait in these tests. It only turns a hang into a
// failure; no test asserts how long anything takes.
const failsafe = 20 * time.Second

// syncBuffer is a bytes.Buffer safe for concurrent use, used as log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fixture is an MCP server with test tools and the channels that drive them.
type fixture struct {
	srv     *server.MCPServer
	logs    *syncBuffer
	started chan string   // receives the token of every block call that started
	release chan struct{} // closing it lets every block call return

	running atomic.Int32 // block calls currently running
	maxRun  atomic.Int32 // highest value running reached

	mu            sync.Mutex
	notifications []string // seq params of notifications/test, in handling order
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		logs:    &syncBuffer{},
		started: make(chan string, 1000),
		release: make(chan struct{}),
	}
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false), server.WithLogging())
	srv.AddTool(mcp.NewTool("notify", mcp.WithNumber("n"), mcp.WithString("token")), notifyTool)
	srv.AddTool(mcp.NewTool("block", mcp.WithString("token")), f.blockTool)
	srv.AddTool(mcp.NewTool("panic"), panicTool)
	srv.AddTool(mcp.NewTool("sample"), sampleTool)
	srv.AddTool(mcp.NewTool("elicit"), elicitTool)
	srv.AddTool(mcp.NewTool("roots"), rootsTool)
	srv.AddTool(mcp.NewTool("whoami"), whoamiTool)
	srv.AddNotificationHandler("notifications/test", f.recordNotification)
	f.srv = srv
	return f
}

// notifyTool sends n progress notifications and one log message, all tagged
// with token, and then returns.
func notifyTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := req.GetInt("n", 0)
	token := req.GetString("token", "")
	srv := server.ServerFromContext(ctx)
	for i := range n {
		params := map[string]any{"progressToken": token, "progress": i + 1, "total": n}
		if err := srv.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
			return nil, fmt.Errorf("send progress: %w", err)
		}
	}
	msg := mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "notify", map[string]any{"token": token})
	if err := srv.SendLogMessageToClient(ctx, msg); err != nil {
		return nil, fmt.Errorf("send log: %w", err)
	}
	return mcp.NewToolResultText("done " + token), nil
}

// blockTool runs until the fixture's release channel closes or its context
// is done, and reports which happened.
func (f *fixture) blockTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		old := f.maxRun.Load()
		if n <= old || f.maxRun.CompareAndSwap(old, n) {
			break
		}
	}
	f.started <- req.GetString("token", "")
	select {
	case <-f.release:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		return mcp.NewToolResultText("cancelled"), nil
	}
	return mcp.NewToolResultText("released"), nil
}

func panicTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	panic("boom")
}

func sampleTool(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req := mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hello")}},
		MaxTokens: 10,
	}}
	//lint:ignore SA1019 the test's tool samples as a server of the protocol revisions that have sampling does.
	res, err := server.ServerFromContext(ctx).RequestSampling(ctx, req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	text, ok := res.Content.(mcp.TextContent)
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("unexpected content %T", res.Content)), nil
	}
	return mcp.NewToolResultText(text.Text), nil
}

func elicitTool(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req := mcp.ElicitationRequest{Params: mcp.ElicitationParams{
		Message:         "name?",
		RequestedSchema: map[string]any{"type": "object"},
	}}
	res, err := server.ServerFromContext(ctx).RequestElicitation(ctx, req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(string(res.Action)), nil
}

func rootsTool(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := server.ServerFromContext(ctx).RequestRoots(ctx, mcp.ListRootsRequest{})
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if len(res.Roots) == 0 {
		return mcp.NewToolResultError("no roots"), nil
	}
	return mcp.NewToolResultText(res.Roots[0].URI), nil
}

// whoamiTool reports the session ID and the client name given at initialize.
func whoamiTool(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return mcp.NewToolResultError("session has no client info"), nil
	}
	return mcp.NewToolResultText(session.SessionID() + "/" + session.GetClientInfo().Name), nil
}

func (f *fixture) recordNotification(_ context.Context, n mcp.JSONRPCNotification) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notifications = append(f.notifications, fmt.Sprint(n.Params.AdditionalFields["seq"]))
}

// rpcError is the error member of a JSON-RPC response.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcMsg is one line the server wrote, decoded.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	raw     string
}

// id returns the message's id as raw JSON text, or "" if it has none.
func (m rpcMsg) id() string {
	return string(m.ID)
}

// toolText returns the first text content of a tools/call result and whether
// the result is an error result.
func (m rpcMsg) toolText(t *testing.T) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("message %s is not a tool result with content (err %v)", m.raw, err)
	}
	return res.Content[0].Text, res.IsError
}

// progressToken returns the token a notification from notifyTool carries.
func (m rpcMsg) progressToken(t *testing.T) string {
	t.Helper()
	var p struct {
		ProgressToken string `json:"progressToken"`
		Data          struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("bad notification params in %s: %v", m.raw, err)
	}
	if m.Method == "notifications/message" {
		return p.Data.Token
	}
	return p.ProgressToken
}

// testClient drives one ServeStdio call through a pair of pipes.
type testClient struct {
	t      *testing.T
	in     *io.PipeWriter
	msgs   chan rpcMsg
	cancel context.CancelFunc

	done     chan struct{} // closed when ServeStdio returned
	serveErr error

	readerDone chan struct{} // closed when the output reader finished
}

// startClient runs ServeStdio for srv in the background. Every line the
// server writes is checked to be exactly one JSON-RPC 2.0 object.
func startClient(t *testing.T, srv *server.MCPServer, opts StdioOptions) *testClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &testClient{
		t:          t,
		in:         inW,
		msgs:       make(chan rpcMsg, 1<<14),
		cancel:     cancel,
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	go func() {
		c.serveErr = ServeStdio(ctx, srv, inR, outW, opts)
		outW.Close()
		close(c.done)
	}()
	go c.readOutput(outR)
	t.Cleanup(func() {
		cancel()
		inW.Close()
		c.wait()
		select {
		case <-c.readerDone:
		case <-time.After(failsafe):
			t.Error("output reader did not finish")
		}
	})
	return c
}

// readOutput decodes the server's output until it is closed.
func (c *testClient) readOutput(r io.Reader) {
	defer close(c.readerDone)
	defer close(c.msgs)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var m rpcMsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Errorf("server wrote a line that is not one JSON object: %q: %v", line, err)
			continue
		}
		if m.JSONRPC != "2.0" {
			c.t.Errorf("server wrote a line that is not JSON-RPC 2.0: %q", line)
		}
		m.raw = line
		c.msgs <- m
	}
	if err := sc.Err(); err != nil {
		c.t.Errorf("reading server output: %v", err)
	}
}

// send writes raw to the server's input.
func (c *testClient) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, raw); err != nil {
		c.t.Fatalf("write to server: %v", err)
	}
}

// sendLine writes one line to the server's input.
func (c *testClient) sendLine(line string) {
	c.t.Helper()
	c.send(line + "\n")
}

// next returns the next message the server wrote.
func (c *testClient) next() rpcMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("server output ended while a message was expected")
		}
		return m
	case <-time.After(failsafe):
		c.t.Fatal("timed out waiting for a message from the server")
	}
	return rpcMsg{}
}

// expectResponse returns the next message and fails unless it is a response
// with the given raw id.
func (c *testClient) expectResponse(id string) rpcMsg {
	c.t.Helper()
	m := c.next()
	if m.id() != id || m.Method != "" {
		c.t.Fatalf("got %s, want response with id %s", m.raw, id)
	}
	return m
}

// expectResult is expectResponse for a successful response.
func (c *testClient) expectResult(id string) rpcMsg {
	c.t.Helper()
	m := c.expectResponse(id)
	if m.Error != nil {
		c.t.Fatalf("got error response %s, want result", m.raw)
	}
	return m
}

// initialize performs the handshake and enables all log levels.
func (c *testClient) initialize(name string) {
	c.t.Helper()
	c.sendLine(initializeLine(`"init"`, name))
	c.expectResult(`"init"`)
	c.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.sendLine(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`)
	c.expectResult(`"lvl"`)
}

// wait waits for ServeStdio to return and returns its error.
func (c *testClient) wait() error {
	c.t.Helper()
	select {
	case <-c.done:
		return c.serveErr
	case <-time.After(failsafe):
		c.t.Fatal("ServeStdio did not return")
		return nil
	}
}

// returned reports whether ServeStdio has returned.
func (c *testClient) returned() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// drainOutput returns every remaining message until the output closes.
func (c *testClient) drainOutput() []rpcMsg {
	c.t.Helper()
	var rest []rpcMsg
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return rest
			}
			rest = append(rest, m)
		case <-time.After(failsafe):
			c.t.Fatal("server output did not close")
		}
	}
}

func initializeLine(id, clientName string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":%q,"version":"1"}}}`, id, clientName)
}

func callLine(id, tool string, args map[string]any) string {
	params := map[string]any{"name": tool, "arguments": args}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func quote(s string) string {
	return `"` + s + `"`
}

func testOptions(f *fixture) StdioOptions {
	return StdioOptions{Logger: slog.New(slog.NewTextHandler(f.logs, nil))}
}

// waitStarted waits for a block call to start and returns its token.
func (f *fixture) waitStarted(t *testing.T) string {
	t.Helper()
	select {
	case token := <-f.started:
		return token
	case <-time.After(failsafe):
		t.Fatal("block tool did not start")
		return ""
	}
}

// orderChecker asserts that each notify call's notifications all precede
// its response.
type orderChecker struct {
	t    *testing.T
	want int            // notifications per call
	seen map[string]int // token -> notifications seen so far
	done map[string]bool
}

func newOrderChecker(t *testing.T, perCall int) *orderChecker {
	return &orderChecker{t: t, want: perCall, seen: map[string]int{}, done: map[string]bool{}}
}

// observe records m. It returns the token of a completed call, or "".
func (o *orderChecker) observe(m rpcMsg) string {
	o.t.Helper()
	switch {
	case m.Method == "notifications/progress" || m.Method == "notifications/message":
		token := m.progressToken(o.t)
		if o.done[token] {
			o.t.Errorf("notification for %s arrived after its response: %s", token, m.raw)
		}
		o.seen[token]++
		return ""
	case m.Method == "" && m.Error == nil:
		var token string
		if err := json.Unmarshal(m.ID, &token); err != nil {
			o.t.Fatalf("unexpected response id in %s", m.raw)
		}
		if got := o.seen[token]; got != o.want {
			o.t.Errorf("call %s: %d notifications before its response, want %d", token, got, o.want)
		}
		o.done[token] = true
		return token
	default:
		o.t.Fatalf("unexpected message %s", m.raw)
		return ""
	}
}

func TestNotificationsPrecedeResponse(t *testing.T) {
	tests := []struct {
		name     string
		progress int
	}{
		{"log only", 0},
		{"one progress", 1},
		{"many progress", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			c := startClient(t, f.srv, testOptions(f))
			c.initialize("client")
			c.sendLine(callLine("c1", "notify", map[string]any{"n": tt.progress, "token": "c1"}))
			check := newOrderChecker(t, tt.progress+1)
			for check.observe(c.next()) == "" {
			}
		})
	}
}

func TestNotificationsPrecedeResponseUnderConcurrency(t *testing.T) {
	const (
		calls       = 200
		concurrency = 8
		progress    = 5
	)
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")

	check := newOrderChecker(t, progress+1)
	sent, completed := 0, 0
	sendNext := func() {
		token := fmt.Sprintf("c%d", sent)
		c.sendLine(callLine(token, "notify", map[string]any{"n": progress, "token": token}))
		sent++
	}
	for range concurrency {
		sendNext()
	}
	for completed < calls {
		if check.observe(c.next()) == "" {
			continue
		}
		completed++
		if sent < calls {
			sendNext()
		}
	}
}

func TestInitializeAnsweredBeforePipelinedRequest(t *testing.T) {
	for i := range 50 {
		f := newFixture(t)
		c := startClient(t, f.srv, testOptions(f))
		c.send(initializeLine(`"init"`, "client") + "\n" + `{"jsonrpc":"2.0","id":"list","method":"tools/list"}` + "\n")
		if m := c.next(); m.id() != `"init"` {
			t.Fatalf("iteration %d: first message %s, want initialize response", i, m.raw)
		}
		c.expectResult(`"list"`)
		c.in.Close()
		if err := c.wait(); err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	}
}

func TestBadInputKeepsServing(t *testing.T) {
	const limit = 1024
	padTo := func(id string, size int) string {
		prefix := `{"jsonrpc":"2.0","id":"` + id + `","method":"ping","params":{"pad":"`
		suffix := `"}}`
		return prefix + strings.Repeat("a", size-len(prefix)-len(suffix)) + suffix
	}
	tests := []struct {
		name  string
		input string
		want  []string // expected responses, as exact lines or "~" + substring
	}{
		{
			name:  "not json",
			input: "this is not json\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "truncated json",
			input: `{"jsonrpc":"2.0","id":1,` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "over-long line",
			input: padTo("long", 200<<10) + "\n",
			want:  []string{`~"id":null,"error":{"code":-32600,"message":"line exceeds the maximum length of 1024 bytes"}`},
		},
		{
			name:  "line one byte over the limit",
			input: padTo("long", limit+1) + "\n",
			want:  []string{`~"id":null,"error":{"code":-32600,"message":"line exceeds the maximum length of 1024 bytes"}`},
		},
		{
			name:  "line exactly at the limit",
			input: padTo("exact", limit) + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":"exact","result":{}}`},
		},
		{
			name:  "unknown method",
			input: `{"jsonrpc":"2.0","id":7,"method":"no/such/method"}` + "\n",
			want:  []string{`~"id":7,"error":{"code":-32601,`},
		},
		{
			name:  "blank lines",
			input: "\n   \t\r\n\r\n",
			want:  nil,
		},
		{
			name:  "not an object",
			input: "[1,2,3]\n",
			want:  []string{`~"id":null,"error":{"code":-32600,`},
		},
		{
			name:  "missing method",
			input: `{"jsonrpc":"2.0"}` + "\n",
			want:  []string{`~"id":null,"error":{"code":-32600,`},
		},
		{
			name:  "several bad lines in one write",
			input: "nope\n\n" + padTo("long", 5000) + "\n" + `{"jsonrpc":"2.0","id":8,"method":"nope"}` + "\n",
			want: []string{
				`~"code":-32700`,
				`~"code":-32600`,
				`~"id":8,"error":{"code":-32601,`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			opts := testOptions(f)
			opts.MaxLineBytes = limit
			c := startClient(t, f.srv, opts)
			c.send(tt.input)
			c.sendLine(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			// Requests are answered concurrently, so responses may arrive
			// in any order; match them without regard to order.
			var got []rpcMsg
			for range len(tt.want) + 1 {
				got = append(got, c.next())
			}
			got = removeMatch(t, got, `{"jsonrpc":"2.0","id":"after","result":{}}`)
			for _, want := range tt.want {
				got = removeMatch(t, got, want)
			}
			c.in.Close()
			if err := c.wait(); err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
			if rest := c.drainOutput(); len(rest) != 0 {
				t.Fatalf("unexpected extra output: %s", rest[0].raw)
			}
		})
	}
}

// removeMatch removes the first message matching want from msgs, failing
// if there is none. want is an exact line, or "~" and a substring.
func removeMatch(t *testing.T, msgs []rpcMsg, want string) []rpcMsg {
	t.Helper()
	for i, m := range msgs {
		sub, partial := strings.CutPrefix(want, "~")
		if (partial && strings.Contains(m.raw, sub)) || (!partial && m.raw == want) {
			return append(msgs[:i:i], msgs[i+1:]...)
		}
	}
	var raws []string
	for _, m := range msgs {
		raws = append(raws, m.raw)
	}
	t.Fatalf("no message matches %s among:\n%s", want, strings.Join(raws, "\n"))
	return nil
}

// serveGoroutines lists goroutines running this package's serving code.
func serveGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"transport.ServeStdio", "transport.(*stdioConn)", "transport.(*stdioWriter)"} {
			if strings.Contains(g, fn) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}

// checkNoServeGoroutines fails if serving goroutines are still running once
// they have had ample opportunity to exit.
func checkNoServeGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for {
		left := serveGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines leaked after ServeStdio returned:\n%s", strings.Join(left, "\n\n"))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestShutdownLetsInFlightRequestsFinish(t *testing.T) {
	tests := []struct {
		name string
		stop func(c *testClient)
	}{
		{"eof", func(c *testClient) { c.in.Close() }},
		{"context cancelled", func(c *testClient) { c.cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			opts := testOptions(f)
			draining := make(chan struct{})
			opts.drainStarted = func() { close(draining) }
			c := startClient(t, f.srv, opts)
			c.initialize("client")
			c.sendLine(callLine("slow", "block", map[string]any{"token": "slow"}))
			f.waitStarted(t)

			tt.stop(c)
			select {
			case <-draining:
			case <-time.After(failsafe):
				t.Fatal("ServeStdio did not start draining")
			}
			if c.returned() {
				t.Fatal("ServeStdio returned while a request was in flight")
			}
			close(f.release)

			m := c.expectResult(`"slow"`)
			if text, _ := m.toolText(t); text != "released" {
				t.Fatalf("in-flight call's context was cancelled by shutdown: got %q", text)
			}
			if err := c.wait(); err != nil {
				t.Fatalf("ServeStdio returned %v, want nil", err)
			}
			if rest := c.drainOutput(); len(rest) != 0 {
				t.Fatalf("unexpected output after the last response: %s", rest[0].raw)
			}
			if tt.name == "eof" {
				checkNoServeGoroutines(t)
			}
		})
	}
}

func TestDrainTimeoutCancelsRequests(t *testing.T) {
	f := newFixture(t)
	opts := testOptions(f)
	opts.DrainTimeout = time.Millisecond
	c := startClient(t, f.srv, opts)
	c.initialize("client")
	c.sendLine(callLine("stuck", "block", map[string]any{"token": "stuck"}))
	f.waitStarted(t)
	c.in.Close()

	m := c.expectResult(`"stuck"`)
	if text, _ := m.toolText(t); text != "cancelled" {
		t.Fatalf("got %q, want the call cancelled after the drain timeout", text)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("ServeStdio returned %v, want nil", err)
	}
}

// TestDrainAbandonsDeafRequests: a request that ignores its cancellation
// (a handler stuck in a system call) holds ServeStdio no longer than the
// drain timeout and the grace after it.
func TestDrainAbandonsDeafRequests(t *testing.T) {
	f := newFixture(t)
	deaf := make(chan struct{})
	defer close(deaf)
	f.srv.AddTool(mcp.NewTool("deaf"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.started <- "deaf"
		<-deaf
		return mcp.NewToolResultText("too late"), nil
	})
	opts := testOptions(f)
	opts.DrainTimeout = time.Millisecond
	c := startClient(t, f.srv, opts)
	c.initialize("client")
	c.sendLine(callLine("deaf", "deaf", nil))
	f.waitStarted(t)
	stopped := time.Now()
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Fatalf("ServeStdio returned %v, want nil", err)
	}
	if d := time.Since(stopped); d > cancelGrace+time.Second {
		t.Errorf("ServeStdio returned %v after the end of input, want at most %v", d, cancelGrace)
	}
	if !strings.Contains(f.logs.String(), "ignore their cancellation") {
		t.Errorf("no log line about the abandoned request:\n%s", f.logs)
	}
}

func TestServerToClientRequests(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		method     string
		reply      string // result or error member, e.g. `"result":{...}`
		wantText   string
		wantIsErr  bool
		wantParams string // substring of the request's params
	}{
		{
			name:       "sampling",
			tool:       "sample",
			method:     "sampling/createMessage",
			reply:      `"result":{"role":"assistant","content":{"type":"text","text":"sampled"},"model":"m"}`,
			wantText:   "sampled",
			wantParams: `"text":"hello"`,
		},
		{
			name:      "sampling rejected",
			tool:      "sample",
			method:    "sampling/createMessage",
			reply:     `"error":{"code":-1,"message":"user rejected"}`,
			wantText:  "user rejected",
			wantIsErr: true,
		},
		{
			name:       "elicitation",
			tool:       "elicit",
			method:     "elicitation/create",
			reply:      `"result":{"action":"accept","content":{"name":"x"}}`,
			wantText:   "accept",
			wantParams: `"message":"name?"`,
		},
		{
			name:     "roots",
			tool:     "roots",
			method:   "roots/list",
			reply:    `"result":{"roots":[{"uri":"file:///tmp","name":"tmp"}]}`,
			wantText: "file:///tmp",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			c := startClient(t, f.srv, testOptions(f))
			c.initialize("client")
			c.sendLine(callLine("s", tt.tool, nil))

			req := c.next()
			if req.Method != tt.method || len(req.ID) == 0 {
				t.Fatalf("got %s, want a %s request", req.raw, tt.method)
			}
			if !strings.Contains(string(req.Params), tt.wantParams) {
				t.Fatalf("request params %s do not contain %s", req.Params, tt.wantParams)
			}
			c.sendLine(`{"jsonrpc":"2.0","id":` + req.id() + `,` + tt.reply + `}`)

			text, isErr := c.expectResult(`"s"`).toolText(t)
			if isErr != tt.wantIsErr || !strings.Contains(text, tt.wantText) {
				t.Fatalf("tool returned %q (isError %v), want %q (isError %v)", text, isErr, tt.wantText, tt.wantIsErr)
			}
		})
	}
}

func TestPendingServerRequestFailsAtShutdown(t *testing.T) {
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	c.sendLine(callLine("s", "sample", nil))
	if req := c.next(); req.Method != "sampling/createMessage" {
		t.Fatalf("got %s, want a sampling request", req.raw)
	}
	c.in.Close()

	text, isErr := c.expectResult(`"s"`).toolText(t)
	if !isErr || !strings.Contains(text, errSessionClosed.Error()) {
		t.Fatalf("tool returned %q (isError %v), want the session-closed error", text, isErr)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("ServeStdio returned %v, want nil", err)
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	c.sendLine(callLine("p", "panic", nil))
	m := c.expectResponse(`"p"`)
	if m.Error == nil || m.Error.Code != mcp.INTERNAL_ERROR {
		t.Fatalf("got %s, want a -32603 error", m.raw)
	}

	c.sendLine(callLine("after", "notify", map[string]any{"n": 1, "token": "after"}))
	check := newOrderChecker(t, 2)
	for check.observe(c.next()) == "" {
	}

	logs := f.logs.String()
	for _, want := range []string{"panic", "boom", "goroutine ", "panicTool"} {
		if !strings.Contains(logs, want) {
			t.Errorf("panic log does not contain %q:\n%s", want, logs)
		}
	}
}

// TestReadingGoesOnWhileCallsRun starts more blocking calls than there are
// cores or any former limit on calls in flight, and checks that the server
// still reads: a ping is answered and a cancellation reaches its call.
func TestReadingGoesOnWhileCallsRun(t *testing.T) {
	const calls = 64
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	for i := range calls {
		token := fmt.Sprintf("b%d", i)
		c.sendLine(callLine(token, "block", map[string]any{"token": token}))
	}
	for range calls {
		f.waitStarted(t)
	}
	c.sendLine(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	c.expectResult(`"p"`)
	c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b0"}}`)
	if text, _ := c.expectResult(`"b0"`).toolText(t); text != "cancelled" {
		t.Fatalf("got %q, want the call cancelled", text)
	}

	close(f.release)
	for range calls - 1 {
		if text, _ := c.next().toolText(t); text != "released" {
			t.Fatalf("got %q, want released", text)
		}
	}
}

func TestClientNotificationsHandledInOrder(t *testing.T) {
	const count = 100
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	var input strings.Builder
	var want []string
	for i := range count {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","method":"notifications/test","params":{"seq":%d}}`+"\n", i)
		want = append(want, fmt.Sprint(i))
	}
	input.WriteString(`{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n")
	c.send(input.String())
	c.expectResult(`"p"`)

	f.mu.Lock()
	got := strings.Join(f.notifications, ",")
	f.mu.Unlock()
	if got != strings.Join(want, ",") {
		t.Fatalf("notifications handled as %s, want %s", got, strings.Join(want, ","))
	}
}

func TestCancelledNotificationCancelsRequest(t *testing.T) {
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	c.sendLine(callLine("c1", "block", map[string]any{"token": "c1"}))
	f.waitStarted(t)
	c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`)
	if text, _ := c.expectResult(`"c1"`).toolText(t); text != "cancelled" {
		t.Fatalf("got %q, want the call cancelled", text)
	}
}

func TestSessionPerCall(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	ca := startClient(t, a.srv, testOptions(a))
	cb := startClient(t, b.srv, testOptions(b))
	ca.initialize("alpha")
	cb.initialize("beta")

	for _, tc := range []struct {
		c    *testClient
		want string
	}{{ca, "stdio/alpha"}, {cb, "stdio/beta"}} {
		tc.c.sendLine(callLine("who", "whoami", nil))
		if text, _ := tc.c.expectResult(`"who"`).toolText(t); text != tc.want {
			t.Errorf("whoami = %q, want %q", text, tc.want)
		}
	}

	ca.in.Close()
	if err := ca.wait(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	err := a.srv.SendNotificationToSpecificClient("stdio", "notifications/test", nil)
	if !errors.Is(err, server.ErrSessionNotFound) {
		t.Fatalf("session still registered after return: SendNotificationToSpecificClient = %v", err)
	}
}

func TestSecondConcurrentServeOnOneServerFails(t *testing.T) {
	f := newFixture(t)
	c := startClient(t, f.srv, testOptions(f))
	c.initialize("client")
	err := ServeStdio(context.Background(), f.srv, strings.NewReader(""), io.Discard, testOptions(f))
	if !errors.Is(err, server.ErrSessionExists) {
		t.Fatalf("second ServeStdio = %v, want ErrSessionExists", err)
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("disk on fire")
	in := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), iotestErrReader{boom})
	var out syncBuffer
	err := ServeStdio(context.Background(), f.srv, in, &out, testOptions(f))
	if !errors.Is(err, boom) {
		t.Fatalf("ServeStdio = %v, want it to wrap %v", err, boom)
	}
	if got := out.String(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("output = %q, want the ping response", got)
	}
}

// iotestErrReader returns err from every Read.
type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }
