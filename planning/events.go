package planning

import (
	"errors"
	"slices"

	"github.com/wink-mcp/wink-mcp/session"
)

// PlanSetup replaces the plan with a new one whose steps are numbered from 1.
type PlanSetup struct {
	Objective string
	Steps     []string
}

// StepsAdded appends pending steps to the plan.
type StepsAdded struct {
	Steps []string
}

// StepUpdated changes a step's title, status or both.
type StepUpdated struct {
	ID     int
	Title  string     // "" leaves the title as it is
	Status StepStatus // "" leaves the status as it is
}

var errNoPlan = errors.New("no plan")

func setup(r *session.Registry) {
	codec := session.JSON[*Plan]()
	codec.Text = func(p *Plan) string {
		if p == nil {
			return ""
		}
		return p.Render()
	}
	session.Persist(r, State, codec)
	session.On(r, State, func(_ *Plan, _ bool, ev PlanSetup) (*Plan, error) {
		p := &Plan{Objective: ev.Objective, Steps: make([]Step, 0, len(ev.Steps))}
		for i, t := range ev.Steps {
			p.Steps = append(p.Steps, Step{ID: i + 1, Title: t, Status: Pending})
		}
		return p.withStatus(), nil
	})
	session.On(r, State, func(old *Plan, ok bool, ev StepsAdded) (*Plan, error) {
		if !ok || old == nil {
			return nil, errNoPlan
		}
		p := &Plan{Objective: old.Objective, Steps: slices.Clip(old.Steps)}
		id := old.nextID()
		for i, t := range ev.Steps {
			p.Steps = append(p.Steps, Step{ID: id + i, Title: t, Status: Pending})
		}
		return p.withStatus(), nil
	})
	session.On(r, State, func(old *Plan, ok bool, ev StepUpdated) (*Plan, error) {
		if !ok || old == nil {
			return nil, errNoPlan
		}
		i := old.step(ev.ID)
		if i < 0 {
			return nil, errors.New("no such step")
		}
		p := &Plan{Objective: old.Objective, Steps: slices.Clone(old.Steps)}
		if ev.Title != "" {
			p.Steps[i].Title = ev.Title
		}
		if ev.Status != "" {
			p.Steps[i].Status = ev.Status
		}
		return p.withStatus(), nil
	})
}
