package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// HistoryKey is the key of the history section.
const HistoryKey = "history"

// HistoryURI is the resource of a session's history.
const HistoryURI = "wink://session/history"

// historyGuidance explains the history section to the model.
const historyGuidance = `The server keeps the last calls that changed this session (its plan, its
files) and lets you go back. ` + "`session_undo`" + ` undoes the last calls,
` + "`session_checkpoint`" + ` names the current point and ` + "`session_restore`" + ` goes back
to a named point. Going back puts back the plan and every file those calls
changed; when a file was changed outside the server since, it refuses,
naming the file, and changes nothing. An undo is kept in the history like
any call, but undo skips it. ` + HistoryURI + ` lists the calls kept,
with the state and files each changed.

To try a call without changing anything, send it with ` + "`_meta`" + `
{"` + MetaDryRun + `": true}: it runs and is checked like any
call, and its result shows what it would have changed.`

// HistorySection returns the history section: session_checkpoint,
// session_restore and session_undo. Its tools work when the server keeps
// a history (Options.History); otherwise each says that it is off.
func HistorySection() *sections.Section {
	return &sections.Section{
		Key:      HistoryKey,
		Title:    "History",
		Guidance: historyGuidance,
		Tools:    []*tools.Tool{sessionUndo(), sessionCheckpoint(), sessionRestore()},
	}
}

// historyOff is what the history tools answer when the server keeps no
// history.
const historyOff = "This server keeps no history of its sessions (history.retention is 0)."

// callHistoryOf returns the history part of the call of ctx, or nil.
func callHistoryOf(ctx context.Context) *callHistory {
	ch, _ := ctx.Value(historyKey{}).(*callHistory)
	return ch
}

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

// goBack puts the session of the call back at t (restoreTo) and returns
// the result, led by what.
func goBack(ctx *tools.Context, ch *callHistory, d *historyDoc, t target, what string) (tools.Result[restoreResult], error) {
	var undone []undoneCall
	for _, c := range d.Commits {
		if c.Seq > t.seq && !c.Restores && !c.Undone {
			undone = append([]undoneCall{{CallID: c.CallID, Tool: c.Tool}}, undone...)
		}
	}
	files, refused, err := ch.restoreTo(ctx, ctx.Call, d, t)
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

// addHistoryResource exposes HistoryURI, read from the store.
func (s *Server) addHistoryResource() {
	s.addResource(
		mcp.NewResource(HistoryURI, "Session history",
			mcp.WithResourceDescription("The last calls that changed this session, oldest first: call id, tool, time, the state slices and the files each changed, whether it was undone; and the session's checkpoints."),
			mcp.WithMIMEType("application/json")),
		func(ctx context.Context, sess *session.Session) (string, error) {
			d, err := s.sessions.storedHistory(ctx, sess.ID())
			if err != nil {
				return "", err
			}
			v := historyView{Retention: s.sessions.retention, Commits: []commitView{}, Checkpoints: []checkpointView{}}
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
			return marshal(v)
		}, false)
}
