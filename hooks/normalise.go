package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// ToolInputConfig asks for one tool's arguments to be normalised before
// validation.
type ToolInputConfig struct {
	Trim bool `json:"trim" jsonschema:"Trim the white space around every string in the arguments."`
}

// Normalise returns the input normalisation stage, which runs just before
// validation for the tools whose input.trim setting is on: it trims the
// white space around every string in the arguments (at any depth), so
// that " Ship it " validates and reaches the tool as "Ship it". The call's
// arguments become the normalised ones: validation, the tool, the session's
// log and the audit all see those. Arguments that are not JSON are left for
// validation to refuse. Nil when no tool asks for it.
func (h *Hooks) Normalise() tools.Middleware {
	if !h.normalise {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			if h.plan(call.Tool).trim {
				if args, ok := trimArgs(call.Args); ok {
					call.Args = args
				}
			}
			return next(ctx, call)
		}
	}
}

// trimArgs returns raw with the strings in it trimmed, and whether anything
// changed.
func trimArgs(raw json.RawMessage) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw, false
	}
	v, changed := trimValue(v)
	if !changed {
		return raw, false
	}
	out, err := marshalPlain(v)
	if err != nil {
		return raw, false
	}
	return out, true
}

func trimValue(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		t := strings.TrimSpace(v)
		return t, t != v
	case []any:
		changed := false
		for i, x := range v {
			var c bool
			if v[i], c = trimValue(x); c {
				changed = true
			}
		}
		return v, changed
	case map[string]any:
		changed := false
		for k, x := range v {
			if nx, c := trimValue(x); c {
				v[k], changed = nx, true
			}
		}
		return v, changed
	}
	return v, false
}
