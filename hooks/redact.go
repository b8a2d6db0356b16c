package hooks

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Redacted replaces every match of a redaction pattern.
const Redacted = "[REDACTED]"

// Redactor replaces the matches of its patterns with Redacted.
type Redactor struct {
	patterns []pattern
}

// pattern is a redaction pattern and the literal text every match of it
// starts with (regexp's LiteralPrefix), which is looked for first: most
// texts hold no match, and a substring search is much cheaper than running
// the expression.
type pattern struct {
	re          *regexp.Regexp
	prefix      string
	prefixBytes []byte
}

func (p pattern) matchString(s string) bool {
	return strings.Contains(s, p.prefix) && p.re.MatchString(s)
}

func (p pattern) match(b []byte) bool {
	return bytes.Contains(b, p.prefixBytes) && p.re.Match(b)
}

// NewRedactor compiles the patterns (RE2 syntax).
func NewRedactor(patterns ...string) (*Redactor, error) {
	var res []*regexp.Regexp
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, err
		}
		res = append(res, re)
	}
	return newRedactor(res), nil
}

func newRedactor(res []*regexp.Regexp) *Redactor {
	r := &Redactor{patterns: make([]pattern, len(res))}
	for i, re := range res {
		prefix, _ := re.LiteralPrefix()
		r.patterns[i] = pattern{re: re, prefix: prefix, prefixBytes: []byte(prefix)}
	}
	return r
}

// String returns s with every match replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, p := range r.patterns {
		if p.matchString(s) {
			s = p.re.ReplaceAllLiteralString(s, Redacted)
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
	if may, known := r.valueMayMatch(out.Value); known && !may {
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
	for _, p := range r.patterns {
		if p.match(raw) {
			return true
		}
	}
	return false
}

// callMayMatch reports whether a pattern may match in what the redaction
// stage looks at: the arguments, the outcome's text, message, value and
// text blocks. It looks for the patterns once in all of them together
// (a false alarm only sends the stage to look at each), as most calls hold
// no secret at all.
func (r *Redactor) callMayMatch(args []byte, out *tools.Outcome) bool {
	if bytes.IndexByte(args, '\\') >= 0 {
		return true // an escape may hide a match
	}
	bp := stringsPool.Get().(*[]byte)
	defer stringsPool.Put(bp)
	b := append((*bp)[:0], args...)
	b = append(append(b, 0), out.Text()...)
	b = append(append(b, 0), out.Message...)
	for _, c := range out.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b = append(append(b, 0), tc.Text...)
		}
	}
	if !isNil(out.Value) {
		var known bool
		if b, known = appendStrings(append(b, 0), reflect.ValueOf(out.Value), 0); !known {
			*bp = b[:0]
			return true
		}
	}
	*bp = b[:0]
	for _, p := range r.patterns {
		if p.match(b) {
			return true
		}
	}
	return false
}

// stringsPool holds buffers for valueMayMatch and callMayMatch.
var stringsPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// valueMayMatch reports whether a pattern may match inside a string (or an
// object key) of v's JSON form, telling from v's strings without encoding
// it; known is false when v holds something whose JSON form its Go value
// does not show (a custom marshaler, []byte, the ",string" option), and
// the JSON form must be looked at.
func (r *Redactor) valueMayMatch(v any) (may, known bool) {
	bp := stringsPool.Get().(*[]byte)
	defer stringsPool.Put(bp)
	b, ok := appendStrings((*bp)[:0], reflect.ValueOf(v), 0)
	*bp = b[:0]
	if !ok {
		return false, false
	}
	for _, p := range r.patterns {
		if p.match(b) {
			return true, true
		}
	}
	return false, true
}

// appendStrings appends the strings of v and the keys of its JSON objects
// to b, each followed by a NUL byte, or reports false when v holds
// something whose JSON form it does not show.
func appendStrings(b []byte, v reflect.Value, depth int) ([]byte, bool) {
	if !v.IsValid() {
		return b, true
	}
	if depth > maxDepth {
		return b, false
	}
	if c := collectorOf(v.Type()); c != nil {
		return c(b, v, depth)
	}
	return b, true
}

// A collector appends the strings of a value of one type (see
// appendStrings).
type collector func(b []byte, v reflect.Value, depth int) ([]byte, bool)

// collectors caches the collector of each type met; a nil collector means
// the type holds no strings.
var collectorCache sync.Map // reflect.Type -> collector

func collectorOf(t reflect.Type) collector {
	if c, ok := collectorCache.Load(t); ok {
		return c.(collector)
	}
	c := compileCollector(t, map[reflect.Type]*collector{})
	collectorCache.Store(t, c)
	return c
}

// opaque is the collector of values whose JSON form their Go value does
// not show.
func opaque(b []byte, _ reflect.Value, _ int) ([]byte, bool) { return b, false }

// compileCollector builds t's collector; compiling holds the collectors
// being built, for recursive types.
func compileCollector(t reflect.Type, compiling map[reflect.Type]*collector) collector {
	if p, ok := compiling[t]; ok {
		return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			if *p == nil {
				return b, true
			}
			return (*p)(b, v, depth)
		}
	}
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return opaque
	}
	var c collector
	compiling[t] = &c
	defer delete(compiling, t)
	switch t.Kind() {
	case reflect.String:
		c = func(b []byte, v reflect.Value, _ int) ([]byte, bool) {
			return append(append(b, v.String()...), 0), true
		}
	case reflect.Interface:
		c = func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			if v.IsNil() {
				return b, true
			}
			return appendStrings(b, v.Elem(), depth+1)
		}
	case reflect.Pointer:
		if elem := compileCollector(t.Elem(), compiling); elem != nil {
			c = func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
				if v.IsNil() {
					return b, true
				}
				if depth > maxDepth {
					return b, false
				}
				return elem(b, v.Elem(), depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return opaque // base64
		}
		if elem := compileCollector(t.Elem(), compiling); elem != nil {
			c = func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
				ok := true
				for i := 0; i < v.Len() && ok; i++ {
					b, ok = elem(b, v.Index(i), depth+1)
				}
				return b, ok
			}
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return opaque
		}
		elem := compileCollector(t.Elem(), compiling)
		c = func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			ok := true
			for it := v.MapRange(); it.Next() && ok; {
				b = append(append(b, it.Key().String()...), 0)
				if elem != nil {
					b, ok = elem(b, it.Value(), depth+1)
				}
			}
			return b, ok
		}
	case reflect.Struct:
		c = compileStructCollector(t, compiling)
	}
	return c
}

// compileStructCollector builds the collector of a struct type: the names
// of its fields, then the strings of their values.
func compileStructCollector(t reflect.Type, compiling map[reflect.Type]*collector) collector {
	type field struct {
		index int
		c     collector
	}
	var names []byte
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() && !f.Anonymous || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "string") {
			return opaque
		}
		if name == "" {
			name = f.Name
		}
		names = append(append(names, name...), 0)
		if c := compileCollector(f.Type, compiling); c != nil {
			fields = append(fields, field{i, c})
		}
	}
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		b = append(b, names...)
		ok := true
		for i := 0; i < len(fields) && ok; i++ {
			b, ok = fields[i].c(b, v.Field(fields[i].index), depth+1)
		}
		return b, ok
	}
}

// maxDepth bounds the pointers followed, as values may be cyclic.
const maxDepth = 100

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

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
			if r == nil || !r.callMayMatch(call.Args, out) {
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
