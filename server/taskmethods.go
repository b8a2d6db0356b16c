package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
)

// taskTime is how a task's times are written: ISO 8601, in UTC, to the
// millisecond.
const taskTime = "2006-01-02T15:04:05.000Z07:00"

// legacyTask is task r as protocol revision 2025-11-25 shows it.
func legacyTask(r *taskRecord) map[string]any {
	t := map[string]any{
		"taskId":        r.ID,
		"status":        r.Status,
		"createdAt":     r.Created.UTC().Format(taskTime),
		"lastUpdatedAt": r.Updated.UTC().Format(taskTime),
		"ttl":           r.TTL.Milliseconds(),
		"pollInterval":  taskPoll.Milliseconds(),
	}
	if r.Message != "" {
		t["statusMessage"] = r.Message
	}
	return t
}

// modernTask is task r as the 2026-07-28 tasks extension shows it, with
// resultType: a task ended with a result is "completed", with the result
// (an error result too); one that ended without (its process lost it) is
// "failed", with a JSON-RPC error.
func modernTask(r *taskRecord, resultType string) map[string]any {
	t := map[string]any{
		"resultType":     resultType,
		"taskId":         r.ID,
		"status":         r.Status,
		"createdAt":      r.Created.UTC().Format(taskTime),
		"lastUpdatedAt":  r.Updated.UTC().Format(taskTime),
		"ttlMs":          r.TTL.Milliseconds(),
		"pollIntervalMs": taskPoll.Milliseconds(),
	}
	if r.Message != "" {
		t["statusMessage"] = r.Message
	}
	switch {
	case r.Status == mcp.TaskStatusFailed && r.Result != nil, r.Status == mcp.TaskStatusCompleted:
		t["status"], t["result"] = mcp.TaskStatusCompleted, r.Result
	case r.Status == mcp.TaskStatusFailed:
		t["error"] = map[string]any{"code": mcp.INTERNAL_ERROR, "message": r.Message}
	}
	return t
}

// taskCreated is the answer to a call made task r.
func taskCreated(r *taskRecord, modern bool) any {
	if modern {
		return modernTask(r, "task")
	}
	return map[string]any{"task": legacyTask(r)}
}

// taskError is a JSON-RPC error answered to a task method.
type taskError struct {
	code int
	msg  string
}

func (e *taskError) Error() string { return e.msg }

// unknownTask answers a task id that names none of the caller's tasks.
func unknownTask(id string) error {
	return &taskError{mcp.INVALID_PARAMS, fmt.Sprintf("Unknown task '%s'.", id)}
}

// taskMethod answers the request id of a task method.
func (s *Server) taskMethod(ctx context.Context, id mcp.RequestId, method string, params json.RawMessage) mcp.JSONRPCMessage {
	var p struct {
		TaskID string    `json:"taskId"`
		Meta   *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	version := p.Meta.ProtocolVersion()
	ctx, end := s.telemetry.Request(ctx, method, id.Value(), version, p.Meta)
	res, err := s.answerTask(ctx, method, p.TaskID, version != "")
	var te *taskError
	switch {
	case errors.As(err, &te):
		end(te.code)
		return mcp.NewJSONRPCError(id, te.code, te.msg, nil)
	case err != nil:
		s.logger.Error("answering a task method failed", "method", method, "task", p.TaskID, "err", err)
		end(mcp.INTERNAL_ERROR)
		return mcp.NewJSONRPCError(id, mcp.INTERNAL_ERROR, sessions.StoreDownMessage+err.Error(), nil)
	}
	end(0)
	return mcp.NewJSONRPCResultResponse(id, res)
}

// answerTask returns the result of a task method of the caller in ctx, of
// a 2026-07-28 client when modern is set.
func (s *Server) answerTask(ctx context.Context, method, id string, modern bool) (any, error) {
	owner := principal(ctx)
	if method == string(mcp.MethodTasksList) {
		if modern {
			return nil, &taskError{mcp.METHOD_NOT_FOUND, "tasks/list was removed in protocol revision 2026-07-28."}
		}
		return s.listTasks(ctx, owner)
	}
	if modern && method == string(mcp.MethodTasksResult) {
		return nil, &taskError{mcp.METHOD_NOT_FOUND, "tasks/result was removed in protocol revision 2026-07-28: tasks/get holds the result."}
	}
	if !modern && method == "tasks/update" {
		return nil, &taskError{mcp.METHOD_NOT_FOUND, "tasks/update is of protocol revision 2026-07-28."}
	}
	r, rev, err := s.tasks.get(ctx, owner, id)
	if errors.Is(err, store.ErrNotFound) {
		if modern && method == string(mcp.MethodTasksCancel) {
			return map[string]any{"resultType": "complete"}, nil // acknowledged whatever the id
		}
		return nil, unknownTask(id)
	}
	if err != nil {
		return nil, err
	}
	switch method {
	case string(mcp.MethodTasksGet):
		s.tasks.finished(r)
		if modern {
			return modernTask(r, "complete"), nil
		}
		return legacyTask(r), nil
	case string(mcp.MethodTasksResult):
		if r, err = s.tasks.wait(ctx, r); err != nil {
			return nil, err
		}
		return taskResult(r), nil
	case string(mcp.MethodTasksCancel):
		if r, err = s.tasks.cancel(ctx, r, rev); err != nil {
			return nil, err
		}
		if modern {
			return map[string]any{"resultType": "complete"}, nil
		}
		return legacyTask(r), nil
	}
	// tasks/update: no task of this server asks for input, so there is
	// nothing to take; the update is acknowledged.
	return map[string]any{"resultType": "complete"}, nil
}

// listTasks returns the tasks of owner, as tasks/list answers them; those
// of the caller's connection alone when owner is "" (anonymous), whose
// tasks anyone may read who knows their ids.
func (s *Server) listTasks(ctx context.Context, owner string) (any, error) {
	recs, err := s.tasks.store.Tasks(ctx, ownerKey(owner))
	if err != nil {
		return nil, err
	}
	list := []map[string]any{}
	for _, b := range recs {
		var r taskRecord
		if json.Unmarshal(b, &r) != nil || r.Owner != owner || owner == "" && r.Conn != connKey(ctx) {
			continue
		}
		s.tasks.finished(&r)
		list = append(list, legacyTask(&r))
	}
	return map[string]any{"tasks": list}, nil
}

// wait returns task r once it has ended, reading its record again when
// the run here ends, or every taskPoll when it runs elsewhere, until ctx
// ends.
func (ts *tasks) wait(ctx context.Context, r *taskRecord) (*taskRecord, error) {
	for !ts.finished(r) {
		var done <-chan struct{}
		if rt := ts.local(r.ID); rt != nil {
			done = rt.done
		}
		select {
		case <-ctx.Done():
			return nil, &taskError{mcp.INTERNAL_ERROR, "The request ended before the task did."}
		case <-done:
		case <-time.After(taskPoll):
		}
		owner, id := r.Owner, r.ID
		var err error
		if r, _, err = ts.get(ctx, owner, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, unknownTask(id)
			}
			return nil, err
		}
	}
	return r, nil
}

// cancel cancels task r, read at revision rev, and returns its record
// once cancelled: here, by stopping its run and waiting for it to end;
// otherwise, by marking it cancelled in the store, for the process that
// runs it. A task that has ended is not cancelled.
func (ts *tasks) cancel(ctx context.Context, r *taskRecord, rev uint64) (*taskRecord, error) {
	for {
		if ts.finished(r) {
			return nil, &taskError{mcp.INVALID_PARAMS, fmt.Sprintf("Task '%s' is already %s; it cannot be cancelled.", r.ID, r.Status)}
		}
		if rt := ts.local(r.ID); rt != nil {
			rt.cancel(errTaskCancelled)
			r, err := ts.wait(ctx, r)
			return r, err
		}
		r.Status, r.Message = mcp.TaskStatusCancelled, "The task was cancelled; nothing was kept."
		_, err := ts.put(ctx, r, rev)
		if !errors.Is(err, store.ErrConflict) {
			return r, err
		}
		id := r.ID
		if r, rev, err = ts.get(ctx, r.Owner, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, unknownTask(id)
			}
			return nil, err
		}
	}
}

// taskResult is the answer of tasks/result for task r, which has ended:
// its tool's result, related to the task.
func taskResult(r *taskRecord) any {
	var res map[string]any
	if r.Result == nil || json.Unmarshal(r.Result, &res) != nil {
		res = map[string]any{"content": []any{mcp.NewTextContent(r.Message)}, "isError": true}
	}
	meta, _ := res["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.RelatedTaskMetaKey] = mcp.RelatedTaskMeta(r.ID)
	res["_meta"] = meta
	return res
}
