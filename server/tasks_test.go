package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/store"
)

// taskSection is countingSection whose tool may run as a task.
func taskSection(contained bool, hold func()) *sections.Section {
	sec := countingSection(contained, hold)
	sec.Tasks = true
	return sec
}

// gate holds the runs of a tool until they are let go: entered receives
// one value per run that reached it. Runs are numbered from 0 in the
// order they reach it.
type gate struct {
	entered chan struct{}
	mu      sync.Mutex
	runs    []chan struct{}
	n       int // the runs that reached it
	all     chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), all: make(chan struct{})} }

func (g *gate) hold() {
	g.mu.Lock()
	ch := g.run(g.n)
	g.n++
	g.mu.Unlock()
	g.entered <- struct{}{}
	select {
	case <-ch:
	case <-g.all:
	}
}

// run returns the channel that lets run i go. The caller holds g.mu.
func (g *gate) run(i int) chan struct{} {
	for len(g.runs) <= i {
		g.runs = append(g.runs, make(chan struct{}))
	}
	return g.runs[i]
}

// let lets run i go.
func (g *gate) let(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.run(i))
}

// release lets every run go, now and later.
func (g *gate) release() { g.once.Do(func() { close(g.all) }) }

// wait waits for a run to reach the gate.
func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no run reached the gate")
	}
}

// taskClient sends requests to a server through server.HandleMessage, as
// a transport does, on the connection id, as principal who.
type taskClient struct {
	t   *testing.T
	srv *server.Server
	c   *mcptest.Client
	ctx context.Context
	n   int
	mu  sync.Mutex
}

func newTaskClient(t *testing.T, srv *server.Server, conn, who string) *taskClient {
	ctx := context.Background()
	if who != "" {
		ctx = identity.With(ctx, identity.Identity{Subject: who})
	}
	c := mcptest.NewClient(t, srv.MCP(), conn)
	return &taskClient{t: t, srv: srv, c: c, ctx: srv.MCP().WithContext(ctx, c)}
}

// send sends a request and decodes its result into v, returning the
// JSON-RPC error, if any.
func (tc *taskClient) send(method string, params map[string]any, v any) *mcp.JSONRPCErrorDetails {
	tc.t.Helper()
	tc.mu.Lock()
	tc.n++
	id := tc.n
	tc.mu.Unlock()
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		tc.t.Fatal(err)
	}
	b, err := json.Marshal(server.HandleMessage(tc.ctx, tc.srv.MCP(), raw))
	if err != nil {
		tc.t.Fatal(err)
	}
	var reply struct {
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		tc.t.Fatal(err)
	}
	if reply.Error == nil && v != nil {
		if err := json.Unmarshal(reply.Result, v); err != nil {
			tc.t.Fatalf("%s: %v in %s", method, err, reply.Result)
		}
	}
	return reply.Error
}

// must sends a request that must succeed.
func (tc *taskClient) must(method string, params map[string]any, v any) {
	tc.t.Helper()
	if e := tc.send(method, params, v); e != nil {
		tc.t.Fatalf("%s: JSON-RPC error %d %s", method, e.Code, e.Message)
	}
}

// legacyTask is a task as 2025-11-25 shows it.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// startTask calls tally_add as a 2025-11-25 task and returns the task.
func (tc *taskClient) startTask(by int, ttl int64) legacyTask {
	tc.t.Helper()
	var created struct{ Task legacyTask }
	tc.must("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": by}, "task": map[string]any{"ttl": ttl}}, &created)
	if created.Task.TaskID == "" || created.Task.Status != "working" {
		tc.t.Fatalf("tools/call with a task: got %+v, want a working task", created.Task)
	}
	return created.Task
}

// result waits for a task's result.
func (tc *taskClient) result(id string) mcptest.Result {
	tc.t.Helper()
	var r mcptest.Result
	tc.must("tasks/result", map[string]any{"taskId": id}, &r)
	return r
}

// tallyHere reads the tally of the client's connection session.
func (tc *taskClient) tallyHere() string {
	tc.t.Helper()
	var res struct{ Contents []struct{ Text string } }
	tc.must("resources/read", map[string]any{"uri": tallyURI}, &res)
	return res.Contents[0].Text
}

// TestTaskLegacy: a 2025-11-25 client sees the tasks capability and which
// tools may run as tasks, gets a task at once, reads it, waits for its
// result, which is the tool's, and lists it; the change commits; another
// principal sees nothing of it.
func TestTaskLegacy(t *testing.T) {
	g := newGate()
	srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(false, g.hold), nil)
	c := newTaskClient(t, srv, "conn-1", "alice")

	var init struct {
		Capabilities struct {
			Tasks      *mcp.TasksCapability `json:"tasks"`
			Extensions map[string]any       `json:"extensions"`
		} `json:"capabilities"`
	}
	c.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}, &init)
	if tk := init.Capabilities.Tasks; tk == nil || tk.List == nil || tk.Cancel == nil || tk.Requests == nil || tk.Requests.Tools == nil || tk.Requests.Tools.Call == nil {
		t.Errorf("initialize: tasks capability %+v, want list, cancel and requests.tools.call", tk)
	}
	if init.Capabilities.Extensions != nil {
		t.Errorf("initialize: extensions %v, want none", init.Capabilities.Extensions)
	}
	var list struct{ Tools []mcp.Tool }
	c.must("tools/list", map[string]any{}, &list)
	if ex := list.Tools[0].Execution; ex == nil || ex.TaskSupport != mcp.TaskSupportOptional {
		t.Errorf("tools/list: execution %+v, want taskSupport optional", ex)
	}

	task := c.startTask(2, 60000)
	if task.TTL != 60000 || task.PollInterval <= 0 {
		t.Errorf("created task %+v: want ttl 60000 and a poll interval", task)
	}
	g.wait(t)
	var got legacyTask
	c.must("tasks/get", map[string]any{"taskId": task.TaskID}, &got)
	if got.Status != "working" {
		t.Errorf("tasks/get while it runs: %+v", got)
	}
	other := newTaskClient(t, srv, "conn-2", "mallory")
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if e := other.send(m, map[string]any{"taskId": task.TaskID}, nil); e == nil || e.Code != mcp.INVALID_PARAMS {
			t.Errorf("%s by another principal: got %+v, want -32602", m, e)
		}
	}
	g.release()
	res := c.result(task.TaskID)
	if res.IsError || !strings.HasPrefix(res.Text(), "Added 2.") {
		t.Errorf("tasks/result: %+v", res)
	}
	if rel, _ := res.Meta[mcp.RelatedTaskMetaKey].(map[string]any); rel["taskId"] != task.TaskID {
		t.Errorf("tasks/result _meta: %v, want the related task", res.Meta)
	}
	if n := c.tallyHere(); n != "2" {
		t.Errorf("tally after the task: %s, want 2", n)
	}
	c.must("tasks/get", map[string]any{"taskId": task.TaskID}, &got)
	if got.Status != "completed" {
		t.Errorf("tasks/get once done: %+v", got)
	}
	var tasks struct{ Tasks []legacyTask }
	c.must("tasks/list", map[string]any{}, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].TaskID != task.TaskID {
		t.Errorf("tasks/list: %+v", tasks.Tasks)
	}
	other.must("tasks/list", map[string]any{}, &tasks)
	if len(tasks.Tasks) != 0 {
		t.Errorf("tasks/list of another principal: %+v", tasks.Tasks)
	}
	if e := c.send("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil); e == nil || e.Code != mcp.INVALID_PARAMS {
		t.Errorf("tasks/cancel of a completed task: got %+v, want -32602", e)
	}
}

// TestTaskCancelled: a task cancelled midway keeps nothing, and says so.
func TestTaskCancelled(t *testing.T) {
	g := newGate()
	srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(false, g.hold), nil)
	c := newTaskClient(t, srv, "conn-1", "alice")
	task := c.startTask(5, 0)
	g.wait(t)
	go func() {
		time.Sleep(100 * time.Millisecond)
		g.release()
	}()
	var got legacyTask
	c.must("tasks/cancel", map[string]any{"taskId": task.TaskID}, &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/cancel: %+v", got)
	}
	if res := c.result(task.TaskID); !res.IsError {
		t.Errorf("tasks/result of a cancelled task: %+v", res)
	}
	if n := c.tallyHere(); n != "0" {
		t.Errorf("tally after a cancelled task: %s, want 0", n)
	}
}

// TestTaskConcurrent: the session's other calls run while a task does;
// the task's commit then loses, and a task of a section that is not
// Contained fails, keeping nothing, while one of a Contained section runs
// again on the latest state.
func TestTaskConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		contained bool
		tally     string
	}{
		{"not contained", false, "1"},
		{"contained", true, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(tc.contained, g.hold), nil)
			c := newTaskClient(t, srv, "conn-1", "alice")
			task := c.startTask(2, 0)
			g.wait(t)
			done := make(chan mcptest.Result, 1)
			go func() {
				var r mcptest.Result
				c.must("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": 1}}, &r)
				done <- r
			}()
			g.wait(t) // the other call runs meanwhile, and commits first
			g.let(1)
			if r := <-done; r.IsError {
				t.Fatalf("the other call: %+v", r)
			}
			g.release()
			res := c.result(task.TaskID)
			switch {
			case tc.contained && res.IsError:
				t.Errorf("the contained task: %+v, want it run again", res)
			case !tc.contained && (!res.IsError || res.Text() != server.TaskChangedMessage):
				t.Errorf("the task: %+v, want %q", res, server.TaskChangedMessage)
			}
			if n := c.tallyHere(); n != tc.tally {
				t.Errorf("tally: %s, want %s", n, tc.tally)
			}
		})
	}
}

// TestTaskOtherReplica: a task's status and result are read, and it is
// cancelled, through another server on the same store.
func TestTaskOtherReplica(t *testing.T) {
	st := store.NewMemory(store.Options{})
	g := newGate()
	a := newReplica(t, st, taskSection(false, g.hold), nil)
	b := newReplica(t, st, taskSection(false, nil), nil)
	ca, cb := newTaskClient(t, a, "conn-a", "alice"), newTaskClient(t, b, "conn-b", "alice")

	done := ca.startTask(1, 0)
	g.wait(t)
	g.release()
	if res := cb.result(done.TaskID); res.IsError || !strings.HasPrefix(res.Text(), "Added 1.") {
		t.Errorf("tasks/result through the other replica: %+v", res)
	}

	g2 := newGate()
	a2 := newReplica(t, st, taskSection(false, g2.hold), nil)
	ca2 := newTaskClient(t, a2, "conn-a2", "alice")
	cancelled := ca2.startTask(7, 0)
	g2.wait(t)
	var got legacyTask
	cb.must("tasks/cancel", map[string]any{"taskId": cancelled.TaskID}, &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/cancel through the other replica: %+v", got)
	}
	g2.release()
	if res := ca2.result(cancelled.TaskID); !res.IsError {
		t.Errorf("tasks/result of a task cancelled elsewhere: %+v", res)
	}
	ca2.must("tasks/get", map[string]any{"taskId": cancelled.TaskID}, &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/get of a task cancelled elsewhere: %+v", got)
	}
	if n := ca2.tallyHere(); n != "0" {
		t.Errorf("tally of the cancelled task's session: %s, want 0", n)
	}
}

// TestTaskModern: a 2026-07-28 client that declares the tasks extension
// gets a task for a call of a tool that may run as one, reads its result
// in tasks/get, and cannot list tasks or ask for a result; a cancel of an
// unknown task is acknowledged.
func TestTaskModern(t *testing.T) {
	srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(false, nil), nil)
	c := newTaskClient(t, srv, "", "alice")
	meta := modern(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	}})
	var disc struct {
		Capabilities struct {
			Tasks      any            `json:"tasks"`
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	c.must("server/discover", map[string]any{"_meta": meta}, &disc)
	if _, ok := disc.Capabilities.Extensions["io.modelcontextprotocol/tasks"]; !ok || disc.Capabilities.Tasks != nil {
		t.Errorf("server/discover: %+v, want the tasks extension and no tasks capability", disc.Capabilities)
	}
	var created struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
		TTLMs      int64  `json:"ttlMs"`
	}
	c.must("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": 3}, "_meta": meta}, &created)
	if created.ResultType != "task" || created.TaskID == "" || created.TTLMs <= 0 {
		t.Fatalf("tools/call: %+v, want a task", created)
	}
	var got struct {
		ResultType string          `json:"resultType"`
		Status     string          `json:"status"`
		Result     *mcptest.Result `json:"result"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for got.Status != "completed" && time.Now().Before(deadline) {
		c.must("tasks/get", map[string]any{"taskId": created.TaskID, "_meta": meta}, &got)
		time.Sleep(10 * time.Millisecond)
	}
	if got.ResultType != "complete" || got.Result == nil || !strings.HasPrefix(got.Result.Text(), "Added 3.") || got.Result.Session() == "" {
		t.Errorf("tasks/get: %+v, want the result inline", got)
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		if e := c.send(m, map[string]any{"taskId": created.TaskID, "_meta": meta}, nil); e == nil || e.Code != mcp.METHOD_NOT_FOUND {
			t.Errorf("%s: got %+v, want -32601", m, e)
		}
	}
	if e := c.send("tasks/cancel", map[string]any{"taskId": "t_nope", "_meta": meta}, nil); e != nil {
		t.Errorf("tasks/cancel of an unknown task: %+v, want an acknowledgement", e)
	}
	var plain mcptest.Result
	c.must("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": 1}, "_meta": modern(nil)}, &plain)
	if plain.IsError || !strings.HasPrefix(plain.Text(), "Added 1.") {
		t.Errorf("a call without the extension: %+v, want the tool's result", plain)
	}
}

// TestTaskRefused: a tool whose section allows no task refuses a call
// that asks for one; without a task tool, the server declares no tasks.
func TestTaskRefused(t *testing.T) {
	srv := newReplica(t, store.NewMemory(store.Options{}), countingSection(false, nil), nil)
	c := newTaskClient(t, srv, "conn-1", "")
	e := c.send("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": 1}, "task": map[string]any{}}, nil)
	if e == nil || e.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("a task of a tool without task support: got %+v, want -32601", e)
	}
	var init struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	c.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}, &init)
	if _, ok := init.Capabilities["tasks"]; ok {
		t.Errorf("initialize: %v, want no tasks capability", init.Capabilities)
	}
	if n := c.tallyHere(); n != "0" {
		t.Errorf("tally: %s, want 0", n)
	}
}

// TestTaskExpires: a task that outlives its time to live is stopped, and
// keeps nothing.
func TestTaskExpires(t *testing.T) {
	g := newGate()
	srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(false, g.hold), nil)
	c := newTaskClient(t, srv, "conn-1", "alice")
	task := c.startTask(4, 300)
	g.wait(t)
	time.Sleep(500 * time.Millisecond)
	g.release()
	var got legacyTask
	deadline := time.Now().Add(5 * time.Second)
	for got.Status != "failed" && time.Now().Before(deadline) {
		if e := c.send("tasks/get", map[string]any{"taskId": task.TaskID}, &got); e != nil {
			break // its record expired too
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.tallyHere(); n != "0" {
		t.Errorf("tally after an expired task: %s, want 0", n)
	}
}

// TestTaskServerStopped: a server that closes stops its running tasks,
// which keep nothing and say why.
func TestTaskServerStopped(t *testing.T) {
	st := store.NewMemory(store.Options{})
	g := newGate()
	tree, err := sections.NewTree(taskSection(false, g.hold))
	if err != nil {
		t.Fatal(err)
	}
	a, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := newTaskClient(t, a, "conn-1", "alice")
	task := c.startTask(6, 0)
	g.wait(t)
	closed := make(chan struct{})
	go func() {
		a.Close()
		close(closed)
	}()
	time.Sleep(200 * time.Millisecond) // Close has stopped the task
	g.release()
	<-closed
	b := newTaskClient(t, newReplica(t, st, taskSection(false, nil), nil), "conn-2", "alice")
	var got legacyTask
	b.must("tasks/get", map[string]any{"taskId": task.TaskID}, &got)
	if got.Status != "failed" || !strings.Contains(got.StatusMessage, "server stopped") {
		t.Errorf("tasks/get of a task its server stopped: %+v", got)
	}
	if res := b.result(task.TaskID); !res.IsError {
		t.Errorf("tasks/result: %+v", res)
	}
}

// TestTaskAnonymous: an anonymous client's tasks are read by their ids
// from any connection, and tasks/list shows each connection its own.
func TestTaskAnonymous(t *testing.T) {
	srv := newReplica(t, store.NewMemory(store.Options{}), taskSection(false, nil), nil)
	one, two := newTaskClient(t, srv, "conn-1", ""), newTaskClient(t, srv, "conn-2", "")
	task := one.startTask(1, 0)
	if res := two.result(task.TaskID); res.IsError {
		t.Errorf("tasks/result from another connection: %+v", res)
	}
	for _, tc := range []struct {
		c    *taskClient
		want int
	}{{one, 1}, {two, 0}} {
		var tasks struct{ Tasks []legacyTask }
		tc.c.must("tasks/list", map[string]any{}, &tasks)
		if len(tasks.Tasks) != tc.want {
			t.Errorf("tasks/list on %s: %+v, want %d", tc.c.c.SessionID(), tasks.Tasks, tc.want)
		}
	}
}

// TestTaskNotForConsent: a call the consent stage asks about is not made a
// task for a 2026-07-28 client that declares the extension: it is answered
// input_required, so that the client can bring the user's answer.
func TestTaskNotForConsent(t *testing.T) {
	tree, err := sections.NewTree(taskSection(false, nil))
	if err != nil {
		t.Fatal(err)
	}
	st, err := consent.New(consent.Config{Enabled: true, Tools: []string{"tally_add"}}, tree.Tools(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Store: store.NewMemory(store.Options{}),
		Consent: st, Setup: st.Setup, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := newTaskClient(t, srv, "", "alice")
	meta := modern(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions":  map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
		"elicitation": map[string]any{},
	}})
	var got struct {
		ResultType string `json:"resultType"`
	}
	c.must("tools/call", map[string]any{"name": "tally_add", "arguments": map[string]any{"by": 3}, "_meta": meta}, &got)
	if got.ResultType != "input_required" {
		t.Errorf("resultType %q, want input_required", got.ResultType)
	}
}
