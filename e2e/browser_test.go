package e2e

import (
	"context"
	"flag"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wink-mcp/wink-mcp/session"
)

var screenshots = flag.Bool("screenshots", false, "write the console's screenshots into docs/ (TestConsoleInBrowser)")

// chromium returns the path of a Chromium or Chrome binary, or skips the
// test when there is none, unless WINK_E2E_REQUIRE_CHROMIUM is set (as
// .ci/run sets it, having installed Debian's chromium package).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WINK_E2E_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// TestConsoleInBrowser drives the console in headless Chromium against the
// built binary serving HTTP with bearer tokens, a disk workspace, the
// default sections (the history's among them) and consent asked in the
// console: the browser opens the console with a token, sees the session's
// objective, opens the diff of a file's change, undoes that call from the
// page (and the file is back on disk), and answers a consent question from
// the page. Every URL the browser visits, pages, forms, fetches and the
// events stream alike, is recorded: none holds the session's handle. With
// -screenshots it writes a screenshot of each page into docs/, for
// docs/console.md.
func TestConsoleInBrowser(t *testing.T) {
	browser := chromium(t)
	dir, ws := t.TempDir(), t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	cfg := filepath.Join(dir, "wink.yaml")
	for name, content := range map[string]string{
		tokens:                        "token-of-alice\n",
		cfg:                           "deadline: 30s\nconsent: {enabled: true, tools: [rm], fallback: console}\n",
		filepath.Join(ws, "notes.md"): "the first draft\n",
		filepath.Join(ws, "old.txt"):  "to be removed\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := serveHTTP(t, "--config", cfg, "--bearer-token-file", tokens, "--workspace", ws, "--state-dir", filepath.Join(dir, "state"))
	base := strings.TrimSuffix(s.url, "/mcp")
	alice := &httpClient{url: s.url, token: "token-of-alice"}
	h := alice.call(t, "planning_setup_plan", map[string]any{"objective": "Polish the notes", "initial_steps": []string{"read them", "rewrite them"}}).session(t)
	alice.call(t, "planning_update_step", with(h, map[string]any{"step_id": 1, "status": "done"}))
	alice.call(t, "read_file", with(h, map[string]any{"file_path": "notes.md"}))
	if r := alice.call(t, "write_file", with(h, map[string]any{"file_path": "notes.md", "content": "the second draft\n", "overwrite": true})); r.IsError {
		t.Fatalf("write_file: %+v", r)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for the life of bctx
		t.Fatal(err)
	}
	var (
		visitedMu sync.Mutex
		visited   []string
	)
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			visitedMu.Lock()
			visited = append(visited, e.Request.URL+e.Request.URLFragment)
			visitedMu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		visitedMu.Lock()
		defer visitedMu.Unlock()
		sessionPage := false
		for _, u := range visited {
			if strings.Contains(u, h) || strings.Contains(u, url.PathEscape(h)) || strings.Contains(u, url.QueryEscape(h)) {
				t.Errorf("the browser visited %s, which holds the session's handle", u)
			}
			sessionPage = sessionPage || strings.Contains(u, "/console/s/"+session.LogID(h))
		}
		if !sessionPage {
			t.Errorf("the browser never visited the session's page by its log identifier; it visited:\n%s", strings.Join(visited, "\n"))
		}
	}()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			page, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s: %v; the page:\n%s", what, err, page)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("the text of %s: %v", sel, err)
		}
		return s
	}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		out := filepath.Join(t.TempDir(), name)
		if *screenshots {
			out = filepath.Join("..", "docs", name)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The sessions page, opened with the token.
	do("the sessions page", chromedp.Navigate(base+"/console?token=token-of-alice"), chromedp.WaitVisible(chromedp.CSS(`table.sessions`)))
	if sessions := text(`table.sessions`); !strings.Contains(sessions, "Polish the notes") || !strings.Contains(sessions, "1/2 done") {
		t.Fatalf("the sessions page shows:\n%s", sessions)
	}
	shoot("console-sessions.png")

	// The session's page, with the diff of write_file open.
	do("the session's page",
		chromedp.Click(chromedp.CSS(`table.sessions a`)),
		chromedp.WaitVisible(chromedp.CSS(`section.plan`)),
		chromedp.Click(chromedp.CSS(`section.history tbody tr:first-child details.changes summary`)),
		chromedp.WaitVisible(chromedp.CSS(`section.history tbody tr:first-child .diff`)))
	plan, diff := text(`section.plan`), text(`section.history tbody tr:first-child .diff`)
	if !strings.Contains(plan, "Polish the notes") || !strings.Contains(diff, "+the second draft") || !strings.Contains(diff, "-the first draft") {
		t.Fatalf("the session's page shows the plan:\n%s\nand the diff:\n%s", plan, diff)
	}
	shoot("console-session.png")

	// Undo write_file from the page: the file is back on disk.
	do("undo",
		chromedp.SetValue(chromedp.CSS(`input[name=steps]`), "1"),
		chromedp.Click(chromedp.CSS(`section.actions form button`)),
		chromedp.WaitVisible(chromedp.CSS(`pre.result`)))
	if b, err := os.ReadFile(filepath.Join(ws, "notes.md")); err != nil || string(b) != "the first draft\n" {
		t.Fatalf("after the undo (%q), notes.md holds %q (%v)", text(`pre.result`), b, err)
	}

	// A consent question, answered from the page while the call waits.
	done := make(chan result1, 1)
	go func() {
		r, err := alice.try("rm", with(h, map[string]any{"path": "old.txt"}))
		done <- result1{r, err}
	}()
	do("the consent question", chromedp.WaitVisible(chromedp.CSS(`section.questions .question`)))
	shoot("console-consent.png")
	do("consenting", chromedp.Click(chromedp.CSS(`section.questions button.accept`)), chromedp.WaitVisible(chromedp.CSS(`pre.result`)))
	select {
	case r := <-done:
		if r.err != nil || r.r.IsError {
			t.Fatalf("rm after the consent: %+v %v", r.r, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rm still waits after the consent")
	}
	if _, err := os.Stat(filepath.Join(ws, "old.txt")); !os.IsNotExist(err) {
		t.Fatalf("old.txt after rm: %v", err)
	}
}

// result1 is a tool call's result or error, passed between goroutines.
type result1 struct {
	r   result
	err error
}
