// Command formatfixture makes the state directory of a format fixture
// (testdata/formats/N) with the wink-mcp binary of the build that writes
// format N: a stdio session named "proj" and an HTTP session, each with a
// plan, files and a history (a checkpoint, an undone write), and their
// call logs. It speaks raw JSON-RPC frames, in the 2026-07-28 form both
// builds since the store exists serve, and writes fixture.json beside the
// state directory with the HTTP session's handle.
//
// scripts/make-format-fixture builds the binary of a commit and runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "", "the wink-mcp binary")
	out := flag.String("out", "", "the fixture's directory, created; the state directory is its state/")
	flag.Parse()
	if err := run(*bin, *out); err != nil {
		fmt.Fprintln(os.Stderr, "formatfixture:", err)
		os.Exit(1)
	}
}

// config turns on the sections whose state a fixture holds.
const config = "sections: [planning, workspace, history]\n"

// The calls of each session, in order: each tool's arguments and a part
// of the text it must answer.
var calls = []struct {
	tool string
	args map[string]any
	want string
}{
	{"planning_setup_plan", map[string]any{"objective": "Ship formats", "initial_steps": []string{"draft", "review"}}, "draft"},
	{"planning_update_step", map[string]any{"step_id": 1, "status": "in_progress"}, "1 [in_progress] draft"},
	{"write_file", map[string]any{"file_path": "notes.md", "content": "hello\n"}, "notes.md"},
	{"session_checkpoint", map[string]any{"name": "first"}, "first"},
	{"edit_file", map[string]any{"file_path": "notes.md", "old_string": "hello", "new_string": "bye"}, "Replaced 1"},
	{"write_file", map[string]any{"file_path": "src/oops.md", "content": "oops\n"}, "oops.md"},
	{"session_undo", map[string]any{}, "Undid 1 call"},
}

func run(bin, out string) error {
	if bin == "" || out == "" {
		return errors.New("want -bin and -out")
	}
	state := filepath.Join(out, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(out, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return err
	}
	if err := stdio(bin, state, cfg); err != nil {
		return fmt.Errorf("stdio: %w", err)
	}
	handle, err := overHTTP(bin, state, cfg)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	b, _ := json.MarshalIndent(map[string]string{"http_handle": handle}, "", "  ")
	return os.WriteFile(filepath.Join(out, "fixture.json"), append(b, '\n'), 0o644)
}

// meta is the _meta of a 2026-07-28 request.
var meta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "formatfixture", "version": "1"},
}

// result is the part of a tools/call result the fixture reads.
type result struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
}

func (r result) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// stdio makes the stdio session "proj", then has the process exit.
func stdio(bin, state, cfg string) error {
	cmd := exec.Command(bin, "--session", "proj", "--state-dir", state, "--config", cfg)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	r := bufio.NewReader(stdout)
	for i, c := range calls {
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": c.tool, "arguments": c.args, "_meta": meta}})
		if _, err := stdin.Write(append(req, '\n')); err != nil {
			return err
		}
		var res result
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("%s: %w; stderr:\n%s", c.tool, err, stderr.String())
			}
			var f struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(line, &f) == nil && string(f.ID) == fmt.Sprint(i+1) {
				if err := json.Unmarshal(f.Result, &res); err != nil {
					return fmt.Errorf("%s: %s", c.tool, line)
				}
				break
			}
		}
		if res.IsError || !strings.Contains(res.text(), c.want) {
			return fmt.Errorf("%s: %+v", c.tool, res)
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { _, _ = io.Copy(io.Discard, r); done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return errors.New("the process did not exit")
	}
}

// overHTTP makes an HTTP session, then stops the server, and returns the
// session's handle.
func overHTTP(bin, state, cfg string) (string, error) {
	cmd := exec.Command(bin, "--http", "127.0.0.1:0", "--state-dir", state, "--config", cfg)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	re := regexp.MustCompile(`msg="serving MCP over HTTP".* addr=(\S+)`)
	url := ""
	for range 1000 {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = "http://" + m[1] + "/mcp"
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		return "", fmt.Errorf("the server did not start:\n%s", stderr.String())
	}
	handle := ""
	for _, c := range calls {
		args := map[string]any{}
		for k, v := range c.args {
			args[k] = v
		}
		if handle != "" {
			args["session"] = handle
		}
		res, err := post(url, c.tool, args)
		if err != nil {
			return "", err
		}
		if res.IsError || !strings.Contains(res.text(), c.want) {
			return "", fmt.Errorf("%s: %+v", c.tool, res)
		}
		if handle == "" {
			handle, _ = res.StructuredContent["session"].(string)
		}
	}
	if handle == "" {
		return "", errors.New("no handle")
	}
	return handle, nil
}

// post calls a tool with one request of the 2026-07-28 form.
func post(url, tool string, args map[string]any) (result, error) {
	var res result
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": meta}})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 {
		b = bytes.TrimSpace(bytes.SplitN(b[i+len("data: "):], []byte("\n"), 2)[0])
	}
	var f struct {
		Result result `json:"result"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return res, fmt.Errorf("%s: %d %s", tool, resp.StatusCode, b)
	}
	return f.Result, nil
}

// syncBuffer is a buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
