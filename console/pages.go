package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/history"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/tools"
)

// row is a session as the sessions page lists it. It holds no handle: pages
// name a session by ID.
type row struct {
	ID        string // session.LogID: what the pages' URLs and events name
	Changed   time.Time
	Objective string
	Status    string
	Done      int
	Steps     int
	Files     []string // files its kept commits changed
	Last      *session.CallSummary
}

// sessionsPage lists the sessions of the viewer's principal, a page at a
// time, the one changed last first.
func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	owner := who.Principal()
	list, err := c.opts.Server.Sessions().List(r.Context(), owner)
	if err != nil {
		c.failed(w, err)
		return
	}
	pages := max(1, (len(list)+c.opts.PageSize-1)/c.opts.PageSize)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = min(max(page, 1), pages)
	list = list[min((page-1)*c.opts.PageSize, len(list)):min(page*c.opts.PageSize, len(list))]
	rows := make([]row, 0, len(list))
	for _, l := range list {
		plan, hist, err := c.read(r.Context(), l.Handle, owner)
		if errors.Is(err, sessions.ErrUnknownSession) {
			continue // ended since the list was read
		}
		if err != nil {
			c.failed(w, err)
			return
		}
		rw := newRow(l, plan, hist)
		if last, err := c.opts.Server.Sessions().Summaries(r.Context(), l.Handle, 1); err == nil && len(last) == 1 {
			rw.Last = &last[0]
		}
		rows = append(rows, rw)
	}
	questions, err := c.opts.Server.Sessions().Questions(r.Context(), owner)
	if err != nil {
		c.failed(w, err)
		return
	}
	c.render(w, "sessions.html", map[string]any{
		"Viewer": viewerName(who), "Rows": rows, "Page": page, "Pages": pages, "Path": Path,
		"Questions": c.questions(questions), "Result": r.URL.Query().Get("result"),
	})
}

// question is a consent question as the pages show it.
type question struct {
	sessions.Question
	ID string // the session's log identifier
}

// questions returns qs as the pages show them.
func (c *Console) questions(qs []sessions.Question) []question {
	out := make([]question, len(qs))
	for i, q := range qs {
		out[i] = question{Question: q, ID: session.LogID(q.Session)}
	}
	return out
}

// answer answers a consent question (accept or decline) and sends the
// browser back to the page it came from.
func (c *Console) answer(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	var accept bool
	switch r.PathValue("answer") {
	case "accept":
		accept = true
	case "decline":
	default:
		http.NotFound(w, r)
		return
	}
	result := "Answered."
	switch err := c.opts.Server.Sessions().Answer(r.Context(), who.Principal(), r.PathValue("id"), accept); {
	case errors.Is(err, sessions.ErrNoQuestion):
		result = "That question no longer waits for an answer: it was answered, or its call stopped waiting."
	case err != nil:
		c.failed(w, err)
		return
	}
	back := Path
	if id := r.FormValue("session"); id != "" {
		back = Path + "/s/" + url.PathEscape(id)
	}
	http.Redirect(w, r, back+"?"+url.Values{"result": {result}}.Encode(), http.StatusSeeOther)
}

// read returns, if owner may see the session h, its plan and, when the
// server keeps histories, its history.
func (c *Console) read(ctx context.Context, h, owner string) (*planning.Plan, *session.HistoryLog, error) {
	u, err := c.opts.Server.Sessions().Read(ctx, sessions.Request{Handle: h, Owner: owner})
	if err != nil {
		return nil, nil, err
	}
	defer u.Release()
	var hist *session.HistoryLog
	if hh := u.History(); hh != nil {
		if hist, err = hh.Log(ctx); err != nil {
			return nil, nil, err
		}
	}
	return planning.Current(u.Session), hist, nil
}

// newRow returns the row of the session of l, with plan and hist.
func newRow(l sessions.Listing, plan *planning.Plan, hist *session.HistoryLog) row {
	rw := row{ID: session.LogID(l.Handle), Changed: l.Changed}
	if plan != nil {
		rw.Objective, rw.Status, rw.Steps = plan.Objective, string(plan.Status), len(plan.Steps)
		for _, s := range plan.Steps {
			if s.Status == planning.Done {
				rw.Done++
			}
		}
	}
	if hist != nil {
		for _, cm := range hist.Commits {
			for _, f := range cm.Files {
				if !f.Dir && !slices.Contains(rw.Files, f.Path) {
					rw.Files = append(rw.Files, f.Path)
				}
			}
		}
	}
	slices.Sort(rw.Files)
	return rw
}

// call is a call of a session's log as its page shows it.
type call struct {
	session.CallSummary
	First string // the first line of the result's message
}

// sessionPage shows a session: its plan, its call log newest first, the
// calls its history keeps and its checkpoints, and the actions on it.
func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	owner := who.Principal()
	m := c.opts.Server.Sessions()
	h, err := m.ByLogID(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		c.failed(w, err)
		return
	}
	plan, hist, err := c.read(r.Context(), h, owner)
	if err != nil {
		c.failed(w, err)
		return
	}
	rw := newRow(sessions.Listing{Handle: h}, plan, hist)
	log, err := m.Summaries(r.Context(), h, c.opts.LogSize)
	if err != nil {
		c.failed(w, err)
		return
	}
	calls := make([]call, 0, len(log))
	for i := len(log) - 1; i >= 0; i-- {
		s := log[i]
		if c.opts.Redact != nil {
			s.Args = string(c.opts.Redact(s.Tool, json.RawMessage(s.Args)))
		}
		first, _, _ := strings.Cut(s.Message, "\n")
		calls = append(calls, call{CallSummary: s, First: first})
	}
	var commits []session.HistoryCommit
	var checkpoints []session.Checkpoint
	if hist != nil {
		commits = slices.Clone(hist.Commits)
		slices.Reverse(commits)
		checkpoints = hist.Checkpoints
	}
	questions, err := m.Questions(r.Context(), owner)
	if err != nil {
		c.failed(w, err)
		return
	}
	questions = slices.DeleteFunc(questions, func(q sessions.Question) bool { return q.Session != h })
	c.render(w, "session.html", map[string]any{
		"Questions": c.questions(questions),
		"Viewer":    viewerName(who), "Session": rw, "Plan": plan, "Calls": calls,
		"Commits": commits, "Checkpoints": checkpoints, "History": c.hasHistory(),
		"Result": r.URL.Query().Get("result"), "Failed": r.URL.Query().Get("failed") != "", "Path": Path,
	})
}

// changesPage shows what commit seq of a session's history changed: each
// STATE slice and file as a unified diff. With ?part=1 it is the diff
// alone, for the session's page to show in place.
func (c *Console) changesPage(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h, err := c.opts.Server.Sessions().ByLogID(r.Context(), who.Principal(), r.PathValue("id"))
	if err != nil {
		c.failed(w, err)
		return
	}
	d, err := c.opts.Server.Sessions().CommitDiff(r.Context(), h, who.Principal(), seq)
	switch {
	case errors.Is(err, sessions.ErrNoCommit):
		c.refuse(w, http.StatusNotFound, "The session's history no longer keeps that change.")
		return
	case err != nil:
		c.failed(w, err)
		return
	}
	name := "changes.html"
	if r.URL.Query().Get("part") != "" {
		name = "diff"
	}
	c.render(w, name, map[string]any{"Viewer": viewerName(who), "ID": session.LogID(h), "Seq": seq, "Diff": d, "Path": Path})
}

// hasHistory reports whether the server has the history section's tools.
func (c *Console) hasHistory() bool {
	return slices.ContainsFunc(c.opts.Server.Tools(), func(t *tools.Tool) bool { return t.Name() == "session_undo" })
}

// act runs an action on a session: undo (form field "steps"), restore
// (form field "name") or end, and sends the browser back to the session's
// page, or to the sessions page once the session ended, with what came of
// it.
func (c *Console) act(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	owner := who.Principal()
	h, err := c.opts.Server.Sessions().ByLogID(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		c.failed(w, err)
		return
	}
	var text string
	var failed bool
	switch r.PathValue("action") {
	case "undo":
		steps, err := strconv.Atoi(r.FormValue("steps"))
		if err != nil || steps < 1 {
			c.refuse(w, http.StatusBadRequest, "Say how many calls to undo: a number from 1.")
			return
		}
		text, failed = c.call(r.Context(), who, h, "session_undo", history.UndoParams{Steps: steps})
	case "restore":
		text, failed = c.call(r.Context(), who, h, "session_restore", history.RestoreParams{Name: r.FormValue("name")})
	case "end":
		if err := c.opts.Server.Sessions().Delete(r.Context(), h, owner); err != nil {
			c.failed(w, err)
			return
		}
		c.opts.Logger.Info("console: ended a session", "session", session.LogHandle(h))
		http.Redirect(w, r, Path+"?ended="+url.QueryEscape(session.LogID(h)), http.StatusSeeOther)
		return
	default:
		http.NotFound(w, r)
		return
	}
	q := url.Values{"result": {text}}
	if failed {
		q.Set("failed", "1")
	}
	http.Redirect(w, r, Path+"/s/"+url.PathEscape(session.LogID(h))+"?"+q.Encode(), http.StatusSeeOther)
}

// call calls tool with args in session h as who, through the server, as a
// client of the 2026-07-28 era would, and returns the result's text and
// whether it is an error.
func (c *Console) call(ctx context.Context, who identity.Identity, h, tool string, args any) (string, bool) {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "wink-mcp console", "version": "1"},
			server.MetaSession:                           h,
		},
	}})
	if err != nil {
		return err.Error(), true
	}
	if !who.Anonymous() {
		ctx = identity.With(ctx, who)
	}
	resp, err := json.Marshal(server.HandleMessage(ctx, c.opts.Server.MCP(), msg))
	if err != nil {
		return err.Error(), true
	}
	var out struct {
		Result *struct {
			Content []struct{ Text string }
			IsError bool
		}
		Error *struct{ Message string }
	}
	if err := json.Unmarshal(resp, &out); err != nil || out.Result == nil {
		if out.Error != nil {
			return out.Error.Message, true
		}
		return fmt.Sprintf("no result: %s", resp), true
	}
	var b strings.Builder
	for _, ct := range out.Result.Content {
		b.WriteString(ct.Text)
	}
	return withoutHandle(b.String(), h), out.Result.IsError
}

// withoutHandle returns text, a result of a call in session h, without
// the line naming the session by its handle (that is for clients, and the
// text goes into the URL the browser is sent to), and with h named by its
// log identifier wherever else it appears.
func withoutHandle(text, h string) string {
	if h == "" {
		return text
	}
	text = strings.TrimSuffix(text, "Session: "+h)
	text = strings.TrimRight(text, "\n")
	return strings.ReplaceAll(text, h, session.LogID(h))
}

// failed answers err, met reading or changing a session: 404 for a session
// that is not the viewer's, or no longer exists, and 503 for a failure of
// the server's own (the store down, say).
func (c *Console) failed(w http.ResponseWriter, err error) {
	if errors.Is(err, sessions.ErrUnknownSession) {
		c.refuse(w, http.StatusNotFound, "No session of yours has that name; it may have ended.")
		return
	}
	c.opts.Logger.Warn("console: a page failed", "err", err)
	msg := sessions.Message(err)
	if msg == "" {
		msg = "The server could not read its sessions; try again."
	}
	c.refuse(w, http.StatusServiceUnavailable, msg)
}

// viewerName says who is looking.
func viewerName(who identity.Identity) string {
	switch {
	case who.Subject != "":
		return who.Subject
	case who.Credential != "":
		return "a bearer token"
	}
	return "anyone with the console's link"
}

// events streams server-sent events while a page listens: one per change
// of a session's head in the store, its data the session's log
// identifier (never its handle), and "questions" when the consent
// questions waiting for the viewer change, so that a page can fetch
// itself again. A comment every 15 s keeps the stream open. The store is
// watched only while a page listens.
func (c *Console) events(w http.ResponseWriter, r *http.Request, who identity.Identity) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changes, err := c.opts.Store.Watch(r.Context())
	if err != nil {
		c.failed(w, sessions.StoreError{Err: err})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	// Questions live in the store apart from the sessions: they are read
	// again every second, and a page told when the set changes.
	asked := time.NewTicker(time.Second)
	defer asked.Stop()
	waiting := ""
	// A session's page also hears of its calls that changed nothing
	// (they leave the head as it was): its last call is read again every
	// second.
	h, last, known := "", "", false
	if id := r.URL.Query().Get("session"); id != "" {
		// Not the viewer's: nothing to follow.
		h, _ = c.opts.Server.Sessions().ByLogID(r.Context(), who.Principal(), id)
	}
	for {
		select {
		case ch, ok := <-changes:
			if !ok {
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", session.LogID(ch.Session))
		case <-asked.C:
			if h != "" {
				if calls, err := c.opts.Server.Sessions().Summaries(r.Context(), h, 1); err == nil {
					id := ""
					if len(calls) == 1 {
						id = calls[0].CallID
					}
					if known && id != last {
						fmt.Fprintf(w, "data: %s\n\n", session.LogID(h))
					}
					last, known = id, true
				}
			}
			if qs, err := c.opts.Server.Sessions().Questions(r.Context(), who.Principal()); err == nil {
				var ids strings.Builder
				for _, q := range qs {
					ids.WriteString(q.ID + " ")
				}
				if ids.String() != waiting {
					waiting = ids.String()
					fmt.Fprint(w, "data: questions\n\n")
				}
			}
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		case <-r.Context().Done():
			return
		}
		fl.Flush()
	}
}
