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
		if re.MatchString(s) {
			s = re.ReplaceAllLiteralString(s, Redacted)
		}
	}
	return s
}

// JSON returns the JSON document raw with matches replaced inside its
// strings (object keys included); the structure is kept. raw itself is
// returned when nothing matched or it is not JSON.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	out, _ := r.json(raw)
	return out
}

// json is JSON, and whether anything matched.
func (r *Redactor) json(raw json.RawMessage) (json.RawMessage, bool) {
	if r == nil || len(raw) == 0 || !r.mayMatch(raw) {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
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
	raw, err := marshalPlain(v)
	if err != nil || !r.mayMatch(raw) {
		return v, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return v, false
	}
	g, changed := r.walk(g)
	if !changed {
		return v, false
	}
	return g, true
}

// outcomeValue redacts the outcome's value, from the encoding the stages
// share.
func (r *Redactor) outcomeValue(out *tools.Outcome) {
	if isNil(out.Value) {
		return
	}
	if s, ok := out.Value.(string); ok {
		if red := r.String(s); red != s {
			out.SetValue(red)
		}
		return
	}
	raw, err := out.ValueJSON()
	if err != nil || !r.mayMatch(raw) {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return
	}
	if g, changed := r.walk(g); changed {
		out.SetValue(g)
	}
}

// mayMatch reports whether a pattern may match inside a string of the JSON
// document raw. Without a backslash in raw, every string (and key) appears
// in it verbatim, so a pattern that matches none of raw matches none of
// them; with one, the strings must be decoded to tell.
func (r *Redactor) mayMatch(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return true
	}
	for _, re := range r.patterns {
		if re.Match(raw) {
			return true
		}
	}
	return false
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

// Redact returns the output redaction stage: on the way out it replaces the
// matches of the tool's patterns in the text the model reads, the message,
// the value (and so the structured content) and extra text blocks, and in
// the arguments as the session's log and the audit record them
// (call.LoggedArgs; the handler got them as sent). What the model sees is
// also what the session's log and the audit sinks keep. Nil when no pattern
// is set.
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
			if text := out.Text(); text != "" {
				if red := r.String(text); red != text {
					out.SetText(red)
				}
			}
			out.Message = r.String(out.Message)
			if args, changed := r.json(call.Args); changed {
				call.LoggedArgs = args
			}
			r.outcomeValue(out)
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
