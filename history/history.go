// Package history is the history section: session_undo undoes a
// session's last calls, session_checkpoint names a point of it, and
// session_restore goes back to one, each putting back the session's state
// and the files outside it that the calls since changed; the resource
// wink://session/history lists the calls kept. The history itself is kept
// by the server (package sessions, Options.History of package server),
// which gives each call its part in it (session.HistoryFrom); without it,
// the tools say that it is off.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Key is the key of the history section.
const Key = "history"

// URI is the resource of a session's history.
const URI = "wink://session/history"

// guidance explains the history section to the model.
const guidance = `The server keeps the last calls that changed this session (its plan, its
files) and lets you go back. ` + "`session_undo`" + ` undoes the last calls,
` + "`session_checkpoint`" + ` names the current point and ` + "`session_restore`" + ` goes back
to a named point. Going back puts back the plan and every file those calls
changed; when a file was changed outside the server since, it refuses,
naming the file, and changes nothing. An undo is kept in the history like
any call, but undo skips it. ` + URI + ` lists the calls kept,
with the state and files each changed.

To try a call without changing anything, send it with ` + "`_meta`" + `
{"` + tools.MetaDryRun + `": true}: it runs and is checked like any
call, and its result shows what it would have changed.`

// New returns the history section: session_checkpoint, session_restore
// and session_undo, and the resource URI. Its tools work when the server
// keeps a history; otherwise each says that it is off.
func New() *sections.Section {
	return &sections.Section{
		Key:      Key,
		Title:    "History",
		Guidance: guidance,
		Tools:    []*tools.Tool{undo(), checkpoint(), restore()},
		Resources: []sections.Resource{{
			URI: URI, Name: "Session history", MIMEType: "application/json",
			Description: "The last calls that changed this session, oldest first: call id, tool, time, the state slices and the files each changed, whether it was undone; and the session's checkpoints.",
			Read:        read,
		}},
	}
}

// off is what the history tools answer when the server keeps no history.
const off = "This server keeps no history of its sessions (history.retention is 0)."

// restoreResult is what an undo or a restore did.
type restoreResult struct {
	// Undone are the calls undone, newest first.
	Undone []undoneCall `json:"undone"`
	// Files are the files put back on disk.
	Files []string `json:"files"`
}

type undoneCall struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
}

// Render lists the calls undone and the files put back.
func (r restoreResult) Render() string {
	var b strings.Builder
	for _, c := range r.Undone {
		fmt.Fprintf(&b, "undone: %s (call %s)\n", c.Tool, c.CallID)
	}
	for _, f := range r.Files {
		fmt.Fprintf(&b, "file put back: %s\n", f)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// goBack puts the session of the call back at the state after commit seq
// of its history h, whose root is root, and returns the result, led by
// what.
func goBack(ctx *tools.Context, h session.History, d *session.HistoryLog, seq uint64, root, what string) (tools.Result[restoreResult], error) {
	var undone []undoneCall
	for _, c := range d.Commits {
		if c.Seq > seq && !c.Restores && !c.Undone {
			undone = append([]undoneCall{{CallID: c.CallID, Tool: c.Tool}}, undone...)
		}
	}
	files, refused, err := h.RestoreTo(ctx, ctx.Session, seq, root)
	if err != nil || refused != "" {
		return tools.Fail[restoreResult](refused), err
	}
	r := restoreResult{Undone: undone, Files: files}
	if r.Files == nil {
		r.Files = []string{}
	}
	if r.Undone == nil {
		r.Undone = []undoneCall{}
	}
	return tools.OK(what, r), nil
}

// historyView is the resource's content: the commits kept, oldest first,
// and the checkpoints.
type historyView struct {
	Retention   int              `json:"retention"`
	Commits     []commitView     `json:"commits"`
	Checkpoints []checkpointView `json:"checkpoints"`
}

type commitView struct {
	Seq      uint64    `json:"seq"`
	CallID   string    `json:"call_id"`
	Tool     string    `json:"tool"`
	Time     time.Time `json:"time"`
	State    []string  `json:"state"`
	Files    []string  `json:"files"`
	Undone   bool      `json:"undone,omitempty"`
	Restores bool      `json:"restores,omitempty"`
}

type checkpointView struct {
	Name  string    `json:"name"`
	After uint64    `json:"after"`
	Time  time.Time `json:"time"`
}

// read is the resource's content, from the history the read's context
// carries.
func read(ctx context.Context, _ *session.Session) (string, error) {
	h := session.HistoryFrom(ctx)
	if h == nil {
		return "", sections.ErrNotFound
	}
	d, err := h.Log(ctx)
	if err != nil {
		return "", err
	}
	v := historyView{Retention: h.Retention(), Commits: []commitView{}, Checkpoints: []checkpointView{}}
	for _, c := range d.Commits {
		cv := commitView{Seq: c.Seq, CallID: c.CallID, Tool: c.Tool, Time: c.Time, State: c.State, Files: []string{}, Undone: c.Undone, Restores: c.Restores}
		if cv.State == nil {
			cv.State = []string{}
		}
		for _, f := range c.Files {
			if f.Dir {
				cv.Files = append(cv.Files, f.Path+"/")
			} else {
				cv.Files = append(cv.Files, f.Path)
			}
		}
		v.Commits = append(v.Commits, cv)
	}
	for _, c := range d.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, checkpointView{Name: c.Name, After: c.Seq, Time: c.Time})
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
