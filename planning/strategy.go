package planning

import (
	"fmt"
	"strings"
)

// Strategy selects the paragraph of guidance that tells the model how to
// work with its plan.
type Strategy string

// The strategies.
const (
	// React adds nothing: reason, call a tool, observe.
	React Strategy = "react"
	// PlanActReflect asks for the whole plan first, a status update after
	// each step, and reflection before moving on.
	PlanActReflect Strategy = "plan_act_reflect"
	// GoalDecomposeRouteSynthesise asks to restate the goal, split it into
	// sub-problems, route each to tools, and synthesise one answer.
	GoalDecomposeRouteSynthesise Strategy = "goal_decompose_route_synthesise"
)

// Strategies lists every strategy, the default first.
func Strategies() []Strategy { return []Strategy{React, PlanActReflect, GoalDecomposeRouteSynthesise} }

// Enum lists the names of the strategies, for the configuration's schema.
func (Strategy) Enum() []string {
	var names []string
	for _, s := range Strategies() {
		names = append(names, string(s))
	}
	return names
}

// ParseStrategy returns the strategy called name; "" is React.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return React, nil
	}
	for _, s := range Strategies() {
		if string(s) == name {
			return s, nil
		}
	}
	names := make([]string, 0, 3)
	for _, s := range Strategies() {
		names = append(names, string(s))
	}
	return "", fmt.Errorf("unknown planning strategy %q (want one of: %s)", name, strings.Join(names, ", "))
}
