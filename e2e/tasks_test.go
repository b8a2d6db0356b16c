package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tasks: a call of a workspace tool may run as a task. A client of the
// 2025-11-25 era asks for one with "task" in the call's params; one of the
// 2026-07-28 era that declares the tasks extension gets one. The task runs
// in the background on a snapshot of its session, commits when it
// completes and keeps nothing when it is cancelled; its record is in the
// store, so another replica answers for it.

// taskExtension is the _meta of a 2026-07-28 request whose client declares
// the tasks extension.
func taskExtension() map[string]any {
	m := modernMeta()
	m["io.modelcontextprotocol/clientCapabilities"] = map[string]any{
		"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	}
	return m
}

// rawTask is a task as the answers of both eras show it.
type rawTask struct {
	ResultType    string  `json:"resultType"`
	TaskID        string  `json:"taskId"`
	Status        string  `json:"status"`
	StatusMessage string  `json:"statusMessage"`
	TTL           int64   `json:"ttl"`
	TTLMs         int64   `json:"ttlMs"`
	Result        *result `json:"result"`
}

// asTask is the params of a 2025-11-25 tools/call of tool run as a task.
func asTask(tool string, args map[string]any) map[string]any {
	return map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}}
}

// decode decodes a frame's result into v; a JSON-RPC error fails the test.
func decode(t *testing.T, f frame, v any) {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("JSON-RPC error %d: %s", f.Error.Code, f.Error.Message)
	}
	if err := json.Unmarshal(f.Result, v); err != nil {
		t.Fatalf("%v in %s", err, f.Result)
	}
}

// bigEdits returns a file of n lines, each a marker, and the apply_edits
// operations that rewrite each marker of it in turn: n edits of a file of
// some megabytes, which take long enough to be cancelled midway.
func bigEdits(n int) (content string, edits []map[string]any) {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<<%05d>> %s\n", i, strings.Repeat("x", 2000))
		edits = append(edits, map[string]any{"op": "edit", "file_path": "big.txt",
			"old_string": fmt.Sprintf("<<%05d>>", i), "new_string": fmt.Sprintf("[[%05d]]", i)})
	}
	return b.String(), edits
}

// TestTaskOverStdio: a 2025-11-25 client over stdio sees the tasks
// capability and which tools may run as tasks; its apply_edits task is
// answered at once, runs while the session's other calls are answered,
// and, cancelled midway, leaves every file and the plan as they were. A
// task that completes commits, and its result is the tool's.
func TestTaskOverStdio(t *testing.T) {
	dir := t.TempDir()
	content, edits := bigEdits(2000)
	files := map[string]string{"big.txt": content, "small.txt": "small\n"}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The file is not read first: no read-before-write.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  read_before_write: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "", "--workspace", dir, "--state-dir", t.TempDir(), "--config", cfg)
	p.mustSend(initializeRequest)
	f, ok := p.await("0")
	if !ok {
		t.Fatalf("no answer to initialize; stderr:\n%s", p.stderr)
	}
	var init struct {
		Capabilities struct {
			Tasks struct {
				List, Cancel *struct{}
				Requests     struct {
					Tools struct{ Call *struct{} }
				}
			}
		}
	}
	decode(t, f, &init)
	if tk := init.Capabilities.Tasks; tk.List == nil || tk.Cancel == nil || tk.Requests.Tools.Call == nil {
		t.Errorf("initialize: tasks capability %+v", tk)
	}
	p.mustSend(initializedNotification)

	var list struct {
		Tools []struct {
			Name      string
			Execution *struct{ TaskSupport string }
		}
	}
	decode(t, p.call(1, "tools/list", nil), &list)
	support := map[string]string{}
	for _, tool := range list.Tools {
		if tool.Execution != nil {
			support[tool.Name] = tool.Execution.TaskSupport
		}
	}
	for _, name := range []string{"grep", "glob", "apply_edits", "planning_setup_plan"} {
		if want := map[bool]string{true: "optional"}[name != "planning_setup_plan"]; support[name] != want {
			t.Errorf("tools/list: %s has taskSupport %q, want %q", name, support[name], want)
		}
	}
	if r := decodeToolResult(t, p.call(2, "tools/call", callTool("planning_setup_plan", map[string]any{"objective": "Keep the files"}))); r.IsError {
		t.Fatalf("planning_setup_plan: %s", r.Content[0].Text)
	}
	plan := func(id int) string {
		var res struct{ Contents []struct{ Text string } }
		decode(t, p.call(id, "resources/read", map[string]any{"uri": planURI}), &res)
		return res.Contents[0].Text
	}
	before := plan(3)

	var created struct{ Task rawTask }
	decode(t, p.call(4, "tools/call", asTask("apply_edits", map[string]any{"edits": edits})), &created)
	task := created.Task
	if task.TaskID == "" || task.Status != "working" || task.TTL != 60000 {
		t.Fatalf("tools/call as a task: %+v", task)
	}
	// Midway: the first edits are on disk.
	for deadline := time.Now().Add(30 * time.Second); ; {
		data, err := os.ReadFile(filepath.Join(dir, "big.txt"))
		if err == nil && !bytes.Equal(data, []byte(content)) {
			break
		}
		if time.Now().After(deadline) {
			var got rawTask
			decode(t, p.call(99, "tasks/get", map[string]any{"taskId": task.TaskID}), &got)
			t.Fatalf("the task changed no file in 30s: %+v", got)
		}
		time.Sleep(time.Millisecond)
	}
	// The session's other calls are answered meanwhile.
	if r := decodeToolResult(t, p.call(5, "tools/call", callTool("read_file", map[string]any{"file_path": "small.txt"}))); r.IsError || !strings.Contains(r.Content[0].Text, "small") {
		t.Errorf("read_file while the task runs: %+v", r)
	}
	var got rawTask
	decode(t, p.call(6, "tasks/get", map[string]any{"taskId": task.TaskID}), &got)
	if got.Status != "working" {
		t.Fatalf("tasks/get after another call: %+v, want the task still working", got)
	}
	decode(t, p.call(7, "tasks/cancel", map[string]any{"taskId": task.TaskID}), &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/cancel: %+v", got)
	}
	if r := decodeToolResult(t, p.call(8, "tasks/result", map[string]any{"taskId": task.TaskID})); !r.IsError {
		t.Errorf("tasks/result of a cancelled task: %+v", r)
	}
	for name, c := range files {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != c {
			t.Errorf("%s after the cancelled task: changed (%v)", name, err)
		}
	}
	if after := plan(9); after != before {
		t.Errorf("plan after the cancelled task:\n%s\nwant\n%s", after, before)
	}
	told := false
	for _, line := range p.out {
		told = told || bytes.Contains(line, []byte(`"notifications/tasks/status"`)) && bytes.Contains(line, []byte(task.TaskID))
	}
	if !told {
		t.Error("no notifications/tasks/status for the cancelled task")
	}

	decode(t, p.call(10, "tools/call", asTask("apply_edits", map[string]any{"edits": edits[:2]})), &created)
	r := decodeToolResult(t, p.call(11, "tasks/result", map[string]any{"taskId": created.Task.TaskID}))
	if r.IsError || !strings.Contains(r.Content[0].Text, "Applied 2 edits to 1 file.") {
		t.Errorf("tasks/result of a completed task: %+v", r)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "big.txt")); !bytes.HasPrefix(data, []byte("[[00000]]")) {
		t.Errorf("big.txt after the completed task starts %q", data[:20])
	}
	var tasks struct{ Tasks []rawTask }
	decode(t, p.call(12, "tasks/list", map[string]any{}), &tasks)
	if len(tasks.Tasks) != 2 || tasks.Tasks[1].Status != "completed" {
		t.Errorf("tasks/list: %+v", tasks.Tasks)
	}
}

// TestTaskOverHTTP: over HTTP, a legacy client's task of write_file (the
// in-memory workspace) commits, and a 2026-07-28 client that declares the
// tasks extension gets a task for a call of a workspace tool, polls it
// with tasks/get and finds the result there, its session named in it.
func TestTaskOverHTTP(t *testing.T) {
	s := serveHTTP(t)
	t.Run("legacy", func(t *testing.T) {
		c := &httpClient{url: s.url}
		c.initialize(t)
		var created struct{ Task rawTask }
		if err := json.Unmarshal(c.post(t, "tools/call", "write_file", asTask("write_file", map[string]any{"file_path": "a.txt", "content": "alpha\n"})), &created); err != nil || created.Task.TaskID == "" {
			t.Fatalf("tools/call as a task: %+v %v", created, err)
		}
		var r result
		if err := json.Unmarshal(c.post(t, "tasks/result", "", map[string]any{"taskId": created.Task.TaskID}), &r); err != nil || r.IsError {
			t.Fatalf("tasks/result: %+v %v", r, err)
		}
		if r := c.call(t, "read_file", map[string]any{"file_path": "a.txt"}); r.IsError || !strings.Contains(r.text(), "alpha") {
			t.Errorf("read_file after the task: %+v", r)
		}
	})
	t.Run("modern", func(t *testing.T) {
		c := &httpClient{url: s.url}
		task := modernTask(t, c, "write_file", map[string]any{"file_path": "b.txt", "content": "beta\n"})
		done := pollTask(t, c, task.TaskID)
		h := done.Result.session(t)
		if r := c.call(t, "read_file", with(h, map[string]any{"file_path": "b.txt"})); r.IsError || !strings.Contains(r.text(), "beta") {
			t.Errorf("read_file in the task's session: %+v", r)
		}
		if _, err := c.send("tasks/list", "", map[string]any{"_meta": taskExtension()}); err == nil || !strings.Contains(err.Error(), "-32601") {
			t.Errorf("tasks/list of a 2026-07-28 client: %v, want -32601", err)
		}
	})
}

// modernTask calls tool as a 2026-07-28 client that declares the tasks
// extension, and returns the task it is answered.
func modernTask(t *testing.T, c *httpClient, tool string, args map[string]any) rawTask {
	t.Helper()
	var task rawTask
	raw := c.post(t, "tools/call", tool, map[string]any{"name": tool, "arguments": args, "_meta": taskExtension()})
	if err := json.Unmarshal(raw, &task); err != nil || task.ResultType != "task" || task.TaskID == "" || task.TTLMs <= 0 {
		t.Fatalf("tools/call with the tasks extension: %s", raw)
	}
	return task
}

// pollTask polls task id with tasks/get until it completes, and returns it.
func pollTask(t *testing.T, c *httpClient, id string) rawTask {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var got rawTask
		if err := json.Unmarshal(c.post(t, "tasks/get", "", map[string]any{"taskId": id, "_meta": taskExtension()}), &got); err != nil {
			t.Fatal(err)
		}
		switch got.Status {
		case "working":
			continue
		case "completed":
			if got.ResultType != "complete" || got.Result == nil || got.Result.IsError {
				t.Fatalf("tasks/get of a completed task: %+v", got)
			}
			return got
		}
		t.Fatalf("tasks/get: %+v", got)
	}
	t.Fatalf("task %s still working after 30s", id)
	return rawTask{}
}

// TestTaskOtherReplica: two replicas on one NATS cluster; a task created
// through one is read, with its result, through the other.
func TestTaskOtherReplica(t *testing.T) {
	urls := startNATS(t).URLs()
	a, b := serveHTTP(t, "--store", urls), serveHTTP(t, "--store", urls)
	ca, cb := &httpClient{url: a.url}, &httpClient{url: b.url}
	task := modernTask(t, ca, "write_file", map[string]any{"file_path": "r.txt", "content": "replicated\n"})
	done := pollTask(t, cb, task.TaskID)
	h := done.Result.session(t)
	if r := cb.call(t, "read_file", with(h, map[string]any{"file_path": "r.txt"})); r.IsError || !strings.Contains(r.text(), "replicated") {
		t.Errorf("read_file through the other replica: %+v", r)
	}
	// A legacy client of b waits in tasks/result for a task of a's.
	legacy := &httpClient{url: a.url}
	legacy.initialize(t)
	var created struct{ Task rawTask }
	if err := json.Unmarshal(legacy.post(t, "tools/call", "write_file", asTask("write_file", map[string]any{"file_path": "l.txt", "content": "legacy\n"})), &created); err != nil {
		t.Fatal(err)
	}
	other := &httpClient{url: b.url}
	other.initialize(t)
	var r result
	if err := json.Unmarshal(other.post(t, "tasks/result", "", map[string]any{"taskId": created.Task.TaskID}), &r); err != nil || r.IsError || !strings.Contains(r.text(), "l.txt") {
		t.Errorf("tasks/result through the other replica: %+v %v", r, err)
	}
}
