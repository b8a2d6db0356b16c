package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// What tasks say and how long they live.
const (
	// TaskChangedMessage is the result of a task whose session another
	// call changed while it ran, when its tool may not run again.
	TaskChangedMessage = "The session changed while the task ran; nothing was kept."
	// tasksSince is the first protocol revision with tasks, 2025-11-25
	// (revisions, dates, compare as strings).
	tasksSince = "2025-11-25"
	// tasksExtension names the 2026-07-28 tasks extension.
	tasksExtension = "io.modelcontextprotocol/tasks"
	// defaultTaskTTL is a task's time to live when the client asks for
	// none; maxTaskTTL the longest it may ask for.
	defaultTaskTTL = time.Hour
	maxTaskTTL     = 24 * time.Hour
	// taskPoll is the polling interval suggested to clients, and how often
	// a running task and a waiting tasks/result read the task's record.
	taskPoll = time.Second
	// taskGrace is how long after its deadline a task still working is
	// taken to have lost the process that ran it.
	taskGrace = 10 * time.Second
)

// errTaskCancelled is the cause of a task's cancellation by tasks/cancel;
// errServerStopped that of the tasks still running when the server closes.
var (
	errTaskCancelled = errors.New("task cancelled")
	errServerStopped = errors.New("server stopped")
)

// taskRecord is what the store keeps of a task.
type taskRecord struct {
	ID      string `json:"id"`
	Owner   string `json:"owner"` // the principal that created it
	Session string `json:"session,omitempty"`
	// Conn is the digest of the connection that created it, by which
	// tasks/list finds the tasks of an anonymous client.
	Conn    string         `json:"conn,omitempty"`
	Tool    string         `json:"tool"`
	Status  mcp.TaskStatus `json:"status"`
	Message string         `json:"message,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	TTL     time.Duration  `json:"ttl"`
	// Deadline is when the task's run ends at the latest.
	Deadline time.Time `json:"deadline"`
	// Result is the CallToolResult, once the task has ended.
	Result json.RawMessage `json:"result,omitempty"`
}

// tasks holds the tasks this process runs, and reads and writes the
// records of every task in the store.
//
// A call of a tool whose section allows it (sections.Section.Tasks)
// may run as a task. A client of protocol revision 2025-11-25 or earlier
// asks for one with "task": {"ttl": ms} in the call's params, and is
// answered a CreateTaskResult at once; a 2026-07-28 client that declares
// the io.modelcontextprotocol/tasks extension in its request's client
// capabilities gets a task for every call of such a tool (the server
// decides, as the extension says). The client then reads the task with
// tasks/get, waits for its result with tasks/result (2025-11-25; a
// 2026-07-28 client finds it in tasks/get), lists its tasks with
// tasks/list (2025-11-25) and cancels one with tasks/cancel; a
// 2025-11-25 client is also sent notifications/tasks/status when its task
// ends, on the connection it asked on, while it is open.
//
// A task is a call like any other, run in the background: it passes every
// stage, and its changes commit when it succeeds and are restored when it
// fails, is cancelled or outlives its time to live. It runs on a snapshot
// of its session, the session decoded from the revision the store held
// when the task was created, so that the session's other calls run
// meanwhile; it commits by compare-and-swap on that revision. When another
// call committed first, a task that touched nothing outside the session's
// state (of a Contained section, or of a read-only tool, which changes
// only what the policies remember) runs again on the latest revision, up
// to maxRuns runs in all within its deadline; any other task fails with
// TaskChangedMessage, its changes restored.
//
// A task's context is detached from the request's: the client may go
// away. It ends at the call deadline (Options.Deadline, or the shorter one
// the call's _meta asks for) or at the end of the task's time to live,
// whichever is first. Its record (status, result once it ended, owner,
// session) is kept in the store (store.Store.PutTask) for its time to
// live, so that any process sharing the store answers for it, and only to
// the principal that created it. A task that is cancelled through another
// process is marked so in the store; the process that runs it reads its
// record every taskPoll and stops it, and checks the record once more
// before it commits. A principal's tasks are read by their ids by anyone
// of that principal; an anonymous client's by anyone who knows the id (as
// hard to guess as a handle), and tasks/list shows it those of its
// connection only.
//
// A task of the disk workspace changes files on disk as it runs, under the
// workspace's per-file locks and undo journal, as a call does: the
// session's other calls see its writes on disk before it commits, and a
// call that changes a file the task holds waits for the task to end (up
// to its own deadline, then it is told the file is being changed).
type tasks struct {
	store  store.Store
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	running map[string]*runningTask // by task id
	closed  bool
	wg      sync.WaitGroup
}

// runningTask is a task running in this process.
type runningTask struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once its final record is written
}

func newTasks(st store.Store, logger *slog.Logger, now func() time.Time) *tasks {
	return &tasks{store: st, logger: logger, now: now, running: map[string]*runningTask{}}
}

// ownerKey is the store's name for the tasks of principal p.
func ownerKey(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:16])
}

// connKey returns the digest of the connection of the request in ctx, ""
// for a 2026-07-28 request, which has none.
func connKey(ctx context.Context) string {
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil && !mcpserver.IsModernRequest(ctx) {
		return ownerKey(cs.SessionID())
	}
	return ""
}

// principal returns the principal of the request in ctx.
func principal(ctx context.Context) string {
	id, _ := identity.From(ctx)
	return id.Principal()
}

// keep is how much longer the record of a task created at created with
// time to live ttl is kept.
func (ts *tasks) keep(r *taskRecord) time.Duration {
	return r.Created.Add(r.TTL).Sub(ts.now())
}

// put writes r at revision rev and returns its new revision.
func (ts *tasks) put(ctx context.Context, r *taskRecord, rev uint64) (uint64, error) {
	r.Updated = ts.now()
	b, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	return ts.store.PutTask(ctx, ownerKey(r.Owner), r.ID, rev, b, ts.keep(r))
}

// get reads the record of task id of the principal owner; store.ErrNotFound
// if it has none of that id.
func (ts *tasks) get(ctx context.Context, owner, id string) (*taskRecord, uint64, error) {
	if !store.ValidSession(id) {
		return nil, 0, store.ErrNotFound
	}
	b, rev, err := ts.store.Task(ctx, ownerKey(owner), id)
	if err != nil {
		return nil, 0, err
	}
	var r taskRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, err
	}
	if r.Owner != owner {
		return nil, 0, store.ErrNotFound
	}
	return &r, rev, nil
}

// finished reports whether r has ended, and says so in r when its process
// lost it: a task still working long after its deadline.
func (ts *tasks) finished(r *taskRecord) bool {
	if r.Status == mcp.TaskStatusWorking && ts.now().After(r.Deadline.Add(taskGrace)) {
		r.Status, r.Message = mcp.TaskStatusFailed, "The server running the task stopped before it finished."
	}
	return r.Status.IsTerminal()
}

// local returns the task id if it runs in this process.
func (ts *tasks) local(id string) *runningTask {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.running[id]
}

// close cancels the tasks running in this process and waits for their
// records to be written.
func (ts *tasks) close() {
	ts.mu.Lock()
	ts.closed = true
	for _, rt := range ts.running {
		rt.cancel(errServerStopped)
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}

// taskRequest is what HandleMessage learned of a tools/call about tasks,
// and where the tool's handler leaves the answer of a call it made a task.
type taskRequest struct {
	modern bool // of protocol revision 2026-07-28 or later
	// asked: a legacy call asked for a task, with ttl (ms, 0: none);
	// offered: a modern call declared the tasks extension.
	asked, offered bool
	ttl            int64

	// Set by the handler: the result to answer instead of the tool's
	// (created), or the JSON-RPC error to answer (refused).
	created any
	refused *mcp.JSONRPCErrorDetails
}

type taskRequestKey struct{}

// taskRequest reads from a tools/call's params what concerns tasks: their
// task and _meta members.
func (c callParts) taskRequest() *taskRequest {
	var p struct {
		Task *struct {
			TTL *float64 `json:"ttl"`
		}
		Meta struct {
			Version      string `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		}
	}
	if c.Task != nil && json.Unmarshal(c.Task, &p.Task) != nil || c.Meta != nil && json.Unmarshal(c.Meta, &p.Meta) != nil {
		return &taskRequest{}
	}
	tr := &taskRequest{modern: p.Meta.Version != ""}
	if tr.modern {
		_, tr.offered = p.Meta.Capabilities.Extensions[tasksExtension]
		return tr
	}
	if p.Task != nil {
		tr.asked = true
		if p.Task.TTL != nil && *p.Task.TTL > 0 {
			tr.ttl = int64(min(*p.Task.TTL, float64(maxTaskTTL/time.Millisecond)))
		}
	}
	return tr
}

// mayTask reports whether m may concern tasks: a task method, a call that
// asks for a task or whose client declares the tasks extension (which
// _meta names). Other messages are not read for tasks.
func (m Message) mayTask() bool {
	switch m.Method {
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksResult), string(mcp.MethodTasksList), string(mcp.MethodTasksCancel), "tasks/update":
		return true
	case string(mcp.MethodToolsCall):
		return m.call.Task != nil || bytes.Contains(m.call.Meta, []byte("task"))
	}
	return false
}

// servers maps each mcp-go server to the Server it serves, for
// HandleMessage to find the tasks.
var servers sync.Map // *mcpserver.MCPServer → *Server

// serveTasks answers m on srv: the task methods from the server's tasks,
// anything else through handle, the answer of a tools/call made a task
// replaced by the task's.
func serveTasks(ctx context.Context, srv *mcpserver.MCPServer, m Message) mcp.JSONRPCMessage {
	v, ok := servers.Load(srv)
	if !ok || !m.HasID() || !m.mayTask() {
		return handle(ctx, srv, m)
	}
	s := v.(*Server)
	var id mcp.RequestId
	if json.Unmarshal(m.ID, &id) != nil {
		return handle(ctx, srv, m)
	}
	if m.Method != string(mcp.MethodToolsCall) {
		var req struct {
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(m.raw, &req) != nil {
			return handle(ctx, srv, m)
		}
		return s.taskMethod(ctx, id, m.Method, req.Params)
	}
	tr := m.call.taskRequest()
	resp := handle(context.WithValue(ctx, taskRequestKey{}, tr), srv, m)
	switch {
	case tr.refused != nil:
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: *tr.refused}
	case tr.created != nil:
		return mcp.NewJSONRPCResultResponse(id, tr.created)
	}
	return resp
}

// TaskMessage reports whether m is a request that Handle alone answers as
// tasks require: a task method, or a tools/call whose client declares the
// 2026-07-28 tasks extension. A transport that hands 2026-07-28 requests
// to mcp-go's own handler (its stateless Streamable HTTP) hands these to
// Handle instead.
func TaskMessage(m Message) bool {
	if !m.HasID() || !m.mayTask() {
		return false
	}
	if m.Method != string(mcp.MethodToolsCall) {
		return true
	}
	return m.call.taskRequest().offered
}

// taskOf returns what the request in ctx asked of tasks, or nil.
func taskOf(ctx context.Context) *taskRequest {
	tr, _ := ctx.Value(taskRequestKey{}).(*taskRequest)
	return tr
}

// startTask answers a call of tool t as a task, if tr asks for one: it
// takes the snapshot the task runs on, stores the task's record, starts
// it, and leaves the CreateTaskResult in tr. A legacy call that asked for a
// task of a tool that allows none is refused (-32601). It reports whether
// it answered the call; res is the result when the call failed before the
// task was created.
func (s *Server) startTask(ctx context.Context, t *tools.Tool, tr *taskRequest, req mcp.CallToolRequest, args json.RawMessage, handle string, n sessions.Need) (res *mcp.CallToolResult, answered bool) {
	switch {
	case tr == nil || !tr.asked && !tr.offered:
		return nil, false
	case !s.tree.Owner(t).Tasks && tr.asked:
		tr.refused = &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("Tool '%s' does not run as a task.", t.Name())}
		return &mcp.CallToolResult{}, true
	case !s.tree.Owner(t).Tasks, !tr.asked && s.consent != nil && s.consent.Asks(t.Name()):
		// A call the consent stage asks about is not made a task unasked:
		// a 2026-07-28 client answers the question by calling again.
		return nil, false
	}
	u, err := s.use(ctx, s.request(ctx, handle, n), false)
	if err != nil {
		return s.sessionFailed(t, err), true
	}
	snap := u
	if u.Handle != "" {
		snap, err = s.sessions.Snapshot(ctx, u.Handle, principal(ctx))
		u.Release()
		if err != nil {
			if u.Minted {
				s.sessions.Discard(u.Handle)
			}
			return s.sessionFailed(t, err), true
		}
		snap.Minted = u.Minted
	}
	now := s.now()
	ttl := defaultTaskTTL
	if tr.ttl > 0 {
		ttl = time.Duration(tr.ttl) * time.Millisecond
	}
	r := &taskRecord{
		ID: "t_" + rand.Text(), Owner: principal(ctx), Session: snap.Handle, Tool: t.Name(),
		Status: mcp.TaskStatusWorking, Created: now, TTL: ttl, Conn: connKey(ctx),
	}
	// The run's deadline, as newCall will compute it, bounded by the TTL.
	runCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), now.Add(ttl))
	r.Deadline = callDeadline(runCtx, &tools.Call{Started: now, Meta: s.readMeta(ctx, metaFields(req))}, s.deadline)
	rt := &runningTask{done: make(chan struct{})}
	runCtx, rt.cancel = context.WithCancelCause(runCtx)
	stop := func() { rt.cancel(nil); cancel() }

	s.tasks.mu.Lock()
	closed := s.tasks.closed
	if !closed {
		s.tasks.running[r.ID] = rt
		s.tasks.wg.Add(1)
	}
	s.tasks.mu.Unlock()
	rev, err := uint64(0), errServerStopped
	if !closed {
		rev, err = s.tasks.put(ctx, r, 0)
	}
	if err != nil {
		stop()
		snap.Release()
		if !closed {
			s.tasks.forget(r.ID)
		}
		if snap.Minted {
			s.sessions.Discard(snap.Handle)
		}
		s.logger.Error("storing a task failed", "tool", t.Name(), "err", err)
		return mcp.NewToolResultError(fmt.Sprintf("Tool '%s' failed: the task could not be stored.", t.Name())), true
	}
	var conn string
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil && !tr.modern {
		conn = cs.SessionID()
	}
	tr.created = taskCreated(r, tr.modern) // before the run takes r
	go func() {
		defer stop()
		s.runTask(runCtx, rt, t, req, args, snap, r, rev, conn)
	}()
	return &mcp.CallToolResult{}, true
}

// metaFields returns the additional fields of a call's _meta.
func metaFields(req mcp.CallToolRequest) map[string]any {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.AdditionalFields
}

// forget removes task id from those running here, and ends its wait
// group's count.
func (ts *tasks) forget(id string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.running[id]; ok {
		delete(ts.running, id)
		ts.wg.Done()
	}
}

// runTask runs the task r of tool t on the snapshot u, as toolHandler runs
// a call, writes its final record (at revision rev) and tells the client
// on connection conn, if any, that it ended.
func (s *Server) runTask(ctx context.Context, rt *runningTask, t *tools.Tool, req mcp.CallToolRequest, args json.RawMessage, u *sessions.Use, r *taskRecord, rev uint64, conn string) {
	defer func() {
		s.tasks.forget(r.ID)
		close(rt.done)
	}()
	go s.tasks.watchCancel(ctx, rt, r)
	// Each run commits only if the task was not cancelled meanwhile.
	ctx = context.WithValue(ctx, commitGuardKey{}, func(ctx context.Context) error {
		if cur, _, err := s.tasks.get(ctx, r.Owner, r.ID); err == nil && cur.Status == mcp.TaskStatusCancelled {
			return errTaskCancelled
		}
		return nil
	})
	minted := u.Minted
	// A run that overruns its deadline ends the task then, while its
	// handler runs on alone (tools.Bound).
	end := func(call *tools.Call, out *tools.Outcome) { s.endTask(ctx, t, u, minted, call, out, r, rev, conn) }
	ctx = context.WithValue(ctx, replyKey{}, answer(end))
	var call *tools.Call
	var out *tools.Outcome
	for run := 1; ; run++ {
		call, out = s.run(ctx, t, u, req, args, nil)
		if u.Handle != "" && (!minted || out.Success) {
			s.sessions.Record(u.Handle, out.Invocation)
		}
		if call.Overran() {
			return // ended when it overran
		}
		if !errors.Is(out.Err, sessions.ErrChanged) || !s.rerun[t] && !t.Annotations().ReadOnly || run == maxRuns || ctx.Err() != nil {
			break
		}
		call.Logger.Debug("the session changed while the task ran: running it again", "run", run+1)
		next, err := s.sessions.Snapshot(ctx, u.Handle, r.Owner)
		if err != nil {
			out = storeFailed(call, err)
			break
		}
		u = next
	}
	end(call, out)
}

// endTask ends the task r of tool t, whose last run, call in the session
// u (which the task started when minted), had the outcome out: it writes
// the task's final record (at revision rev) and tells the client on
// connection conn, if any, that it ended.
func (s *Server) endTask(ctx context.Context, t *tools.Tool, u *sessions.Use, minted bool, call *tools.Call, out *tools.Outcome, r *taskRecord, rev uint64, conn string) {
	changes := s.stateful[t] && !t.Annotations().ReadOnly
	switch {
	case errors.Is(out.Err, sessions.ErrChanged):
		out = tools.Failure(tools.ClassBusy, TaskChangedMessage)
	case out.Success && changes:
		s.notify(u.Handle, nil)
	}
	if minted && !out.Success {
		s.sessions.Discard(u.Handle)
	}
	if out.Success && t == s.tree.Opener() {
		s.toolsChanged(u.Handle)
	}
	handle := u.Handle
	if !changes {
		handle = ""
	}
	res, err := json.Marshal(s.render(call, out, handle))
	if err != nil {
		res = nil
	}
	r.Result, r.Status = res, mcp.TaskStatusCompleted
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTaskCancelled) || errors.Is(out.Err, errTaskCancelled):
		r.Status, r.Message = mcp.TaskStatusCancelled, "The task was cancelled; nothing was kept."
	case errors.Is(cause, errServerStopped):
		r.Status, r.Message = mcp.TaskStatusFailed, "The server stopped before the task finished; nothing was kept."
	case !out.Success:
		r.Status, r.Message = mcp.TaskStatusFailed, out.Message
	}
	s.tasks.finish(r, rev)
	if conn != "" {
		if err := s.mcp.SendNotificationToSpecificClient(conn, mcp.MethodNotificationTasksStatus, legacyTask(r)); err != nil {
			s.logger.Debug("sending notifications/tasks/status failed", "task", r.ID, "err", err)
		}
	}
}

// finish writes the final record r of a task over revision rev. When the
// record moved meanwhile (it was cancelled through another process), a
// cancelled task stays cancelled, with its result.
func (ts *tasks) finish(r *taskRecord, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ts.put(ctx, r, rev)
	if errors.Is(err, store.ErrConflict) {
		var cur *taskRecord
		if cur, rev, err = ts.get(ctx, r.Owner, r.ID); err == nil {
			if cur.Status == mcp.TaskStatusCancelled && r.Status != mcp.TaskStatusCompleted {
				r.Status, r.Message = cur.Status, cur.Message
			}
			_, err = ts.put(ctx, r, rev)
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		ts.logger.Error("storing a task's end failed", "task", r.ID, "status", r.Status, "err", err)
	}
}

// watchCancel reads the record of the running task r every taskPoll, and
// cancels it when another process marked it cancelled, until ctx ends.
func (ts *tasks) watchCancel(ctx context.Context, rt *runningTask, r *taskRecord) {
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if cur, _, err := ts.get(ctx, r.Owner, r.ID); err == nil && cur.Status == mcp.TaskStatusCancelled {
				rt.cancel(errTaskCancelled)
				return
			}
		}
	}
}

// commitGuardKey is the context key of a check a call's commit passes
// first (a task's: that it was not cancelled meanwhile); its error fails
// the call as a commit's would.
type commitGuardKey struct{}

// taskSupport registers the hooks that tell clients which tools may run as
// tasks, and returns the options that declare task support: the tasks
// capability in the answer to initialize (2025-11-25), the tasks extension
// in the answer to server/discover (2026-07-28), each left out of the
// other, and neither for a revision before tasksSince. A server none of whose tools may run as a task declares neither.
// A legacy client's tools/list marks each such tool
// execution.taskSupport "optional"; a 2026-07-28 client's shows none, as
// that revision has no such field.
func (s *Server) taskSupport(hooks *mcpserver.Hooks) []mcpserver.ServerOption {
	if !slices.ContainsFunc(s.tree.Tools(), func(t *tools.Tool) bool { return s.tree.Owner(t).Tasks }) {
		return nil
	}
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if v := mcpserver.RequestProtocolVersion(ctx); mcpserver.IsModernRequest(ctx) || v != "" && v < tasksSince {
			return
		}
		for i, mt := range res.Tools {
			if t := s.byName[mt.Name]; t != nil && s.tree.Owner(t).Tasks {
				res.Tools[i].Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
			}
		}
	})
	hooks.AddAfterInitialize(func(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if res.ProtocolVersion < tasksSince {
			res.Capabilities.Tasks = nil
		}
		ext := maps.Clone(res.Capabilities.Extensions) // the server's own map
		delete(ext, tasksExtension)
		if len(ext) == 0 {
			ext = nil
		}
		res.Capabilities.Extensions = ext
	})
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Capabilities.Tasks = nil
	})
	return []mcpserver.ServerOption{
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithExtensions(map[string]any{tasksExtension: map[string]any{}}),
	}
}
