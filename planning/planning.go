// Package planning is the planning section: a session-scoped plan for an
// agent that works over many steps, with an objective and numbered steps
// that are pending, in progress or done.
//
// The plan lives in a STATE slice of the session and changes only through
// events (PlanSetup, StepsAdded, StepUpdated) and their reducers, so a
// failed call leaves it as it was. Plan values are immutable: a reducer
// builds a new plan.
package planning

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Key is the section's key.
const Key = "planning"

// PlanURI is the resource that shows the session's plan.
const PlanURI = "wink://planning/plan"

// MaxTextLen is the longest objective or step title, in characters, after
// trimming.
const MaxTextLen = 500

// StepStatus is the state of one step.
type StepStatus string

// The step statuses.
const (
	Pending    StepStatus = "pending"
	InProgress StepStatus = "in_progress"
	Done       StepStatus = "done"
)

// Enum lists the step statuses, for the tools' schemas.
func (StepStatus) Enum() []string { return []string{string(Pending), string(InProgress), string(Done)} }

// PlanStatus is the state of the plan as a whole.
type PlanStatus string

// Enum lists the plan statuses, for the tools' schemas.
func (PlanStatus) Enum() []string { return []string{string(Active), string(Completed)} }

// The plan statuses.
const (
	Active    PlanStatus = "active"
	Completed PlanStatus = "completed"
)

// Step is one step of the plan.
type Step struct {
	ID     int        `json:"step_id" jsonschema:"The step's ID, an integer from 1."`
	Title  string     `json:"title" jsonschema:"What the step does."`
	Status StepStatus `json:"status" jsonschema:"The step's status."`
}

// Plan is the session's plan. Treat it as immutable.
type Plan struct {
	Objective string     `json:"objective" jsonschema:"What the plan is for."`
	Status    PlanStatus `json:"status" jsonschema:"active until every step is done, then completed."`
	Steps     []Step     `json:"steps" jsonschema:"The steps, in order."`
}

// Render returns the text the model reads:
//
//	Objective: Ship it
//	Status: active
//
//	1 [pending] draft
//	2 [in_progress] review
func (p *Plan) Render() string {
	var b strings.Builder
	b.Grow(32 + len(p.Objective) + 32*len(p.Steps))
	b.WriteString("Objective: ")
	b.WriteString(p.Objective)
	b.WriteString("\nStatus: ")
	b.WriteString(string(p.Status))
	b.WriteString("\n\n")
	if len(p.Steps) == 0 {
		b.WriteString("<no steps>")
	}
	for i, s := range p.Steps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(s.ID))
		b.WriteString(" [")
		b.WriteString(string(s.Status))
		b.WriteString("] ")
		b.WriteString(s.Title)
	}
	return b.String()
}

// nextID is the largest step ID so far + 1: IDs are never reused.
func (p *Plan) nextID() int {
	n := 0
	for _, s := range p.Steps {
		n = max(n, s.ID)
	}
	return n + 1
}

// step returns the index of the step with the given ID, or -1.
func (p *Plan) step(id int) int {
	for i, s := range p.Steps {
		if s.ID == id {
			return i
		}
	}
	return -1
}

// withStatus returns p with its status derived from its steps: completed
// when there is at least one step and all are done.
func (p *Plan) withStatus() *Plan {
	p.Status = Active
	if len(p.Steps) == 0 {
		return p
	}
	for _, s := range p.Steps {
		if s.Status != Done {
			return p
		}
	}
	p.Status = Completed
	return p
}

// State is the session's plan; absent until the first planning_setup_plan.
var State = session.NewKey[*Plan]("planning.plan")

// Current returns the session's plan, or nil.
func Current(s *session.Session) *Plan {
	p, _ := session.Get(s, State)
	return p
}

// checkText trims s and checks it as an objective or title (what names it
// in the error).
func checkText(what, s string) (string, string) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", what + " must not be empty."
	case utf8.RuneCountInString(s) > MaxTextLen:
		return "", fmt.Sprintf("%s must be <= %d characters.", what, MaxTextLen)
	}
	return s, ""
}

// checkTitles trims and checks every title before any is stored.
func checkTitles(titles []string) ([]string, string) {
	out := make([]string, len(titles))
	for i, t := range titles {
		var msg string
		if out[i], msg = checkText("Title", t); msg != "" {
			return nil, msg
		}
	}
	return out, ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

//go:embed guidance.md
var guidance string

// New returns the planning section with the given strategy's guidance.
func New(strategy Strategy) *sections.Section {
	return &sections.Section{
		Key:      Key,
		Title:    "Planning",
		Guidance: guidance,
		Data:     map[string]any{"Strategy": string(strategy)},
		Tools:    []*tools.Tool{setupPlan(), addStep(), updateStep(), readPlan()},
		Setup:    setup,
		Resources: []sections.Resource{{
			URI:         PlanURI,
			Name:        "Plan",
			Description: "The session's plan: objective, status and steps.",
			MIMEType:    "text/plain",
			Read: func(_ context.Context, s *session.Session) (string, error) {
				if p := Current(s); p != nil {
					return p.Render(), nil
				}
				return "No plan is currently initialised.", nil
			},
		}},
		Contained: true,
	}
}
