package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Redacted replaces every match of a redaction pattern.
const Redacted = "[REDACTED]"

// Redactor replaces the matches of its patterns with Redacted.
type Redactor struct {
	patterns []*regexp.Regexp
}

// NewRedactor compiles the patterns (RE2 syntax).
func NewRedactor(patterns ...string) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, err
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

// String returns s with every match replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// JSON returns the JSON document raw with matches replaced inside its
// strings (object keys included); the structure is kept. raw itself is
// returned when nothing matched; a raw that is not JSON is redacted as
// text.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	out, _ := r.json(raw)
	return out
}

// json is JSON, and whether anything matched.
func (r *Redactor) json(raw json.RawMessage) (json.RawMessage, bool) {
	if r == nil || len(raw) == 0 {
		return raw, false
	}
	v, err := decodeJSON(raw)
	if err != nil {
		s := string(raw)
		out := r.String(s)
		return json.RawMessage(out), out != s
	}
	v, changed := r.walk(v)
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw, false
	}
	return b, true
}

// Value returns v with matches replaced inside the strings of its JSON
// form, and whether anything matched. A changed value comes back as its
// generic JSON form (maps, slices, strings, json.Number, bools).
func (r *Redactor) Value(v any) (any, bool) {
	if r == nil || v == nil {
		return v, false
	}
	if s, ok := v.(string); ok {
		out := r.String(s)
		return out, out != s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	g, err := decodeJSON(raw)
	if err != nil {
		return v, false
	}
	g, changed := r.walk(g)
	if !changed {
		return v, false
	}
	return g, true
}

// decodeJSON decodes one JSON document into its generic form, numbers as
// json.Number so that they keep their digits.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// walk redacts the strings of a generic JSON value.
func (r *Redactor) walk(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		out := r.String(v)
		return out, out != v
	case []any:
		changed := false
		for i, x := range v {
			var c bool
			if v[i], c = r.walk(x); c {
				changed = true
			}
		}
		return v, changed
	case map[string]any:
		changed, renamed := false, false
		for k, x := range v {
			if nx, c := r.walk(x); c {
				v[k], changed = nx, true
			}
			renamed = renamed || r.String(k) != k
		}
		if !renamed {
			return v, changed
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[r.String(k)] = x
		}
		return m, true
	}
	return v, false
}

// marshalPlain marshals v without escaping <, > and &, so that those
// characters appear in strings as themselves.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// RedactArgs returns the arguments of a call of t as the session's log and
// the audit record them: with the matches of the tool's patterns replaced.
func (h *Hooks) RedactArgs(t *tools.Tool, args json.RawMessage) json.RawMessage {
	return h.plan(t).redactor.JSON(args)
}

// Redact returns the output redaction stage: on the way out it replaces the
// matches of the tool's patterns in the text the model reads, the message,
// the value (in its JSON form, and so the structured content) and extra
// text blocks, and in the arguments as the session's log and the audit
// record them (the outcome's LoggedArgs; the handler got them as sent).
// What the model sees is also what the session's log and the audit sinks
// keep. Nil when no pattern is set.
func (h *Hooks) Redact() tools.Middleware {
	if !h.redact {
		return nil
	}
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) *tools.Outcome {
			out := next(ctx, call)
			r := h.plan(call.Tool).redactor
			if r == nil {
				return out
			}
			out.SetText(r.String(out.Text()))
			out.Message = r.String(out.Message)
			if args, changed := r.json(call.Args); changed {
				out.LoggedArgs = args
			}
			if v, changed := r.Value(out.Value); changed {
				out.Value = v
			}
			if len(out.Content) > 0 {
				content := make([]mcp.Content, len(out.Content))
				for i, c := range out.Content {
					if tc, ok := c.(mcp.TextContent); ok {
						tc.Text = r.String(tc.Text)
						c = tc
					}
					content[i] = c
				}
				out.Content = content
			}
			return out
		}
	}
}
