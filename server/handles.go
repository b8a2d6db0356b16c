package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/tools"
)

// MetaSession is the key of a request's _meta that may name the session
// instead of the "session" argument, for a harness that adds it to every
// request; the argument wins.
const MetaSession = tools.MetaPrefix + "session"

// sessionArg is the argument, and the property of structured content, that
// carries a session's handle.
const sessionArg = "session"

// The schemas of the session argument and of the handle in results.
var (
	sessionInput  = json.RawMessage(`{"type":"string","description":"Handle from an earlier result's 'Session:' line; pass it on every call if your client keeps no connection."}`)
	sessionOutput = json.RawMessage(`{"type":"string","description":"The session's handle; pass it as 'session' on later calls."}`)
)

// advertised describes t to mcp-go, with every annotation stated. The tools
// of a section that keeps state get the optional "session" argument, and
// those among them that change state get "session" in their output
// schemas: the one place where the argument is added, for every tool.
func advertised(t *tools.Tool, stateful bool) (mcp.Tool, error) {
	a := t.Annotations()
	mt := mcp.Tool{
		Name:            t.Name(),
		Title:           a.Title,
		Description:     t.Description(),
		RawInputSchema:  t.InputSchema(),
		RawOutputSchema: t.OutputSchema(),
		Annotations: mcp.ToolAnnotation{
			Title:           a.Title,
			ReadOnlyHint:    mcp.ToBoolPtr(a.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(a.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(a.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(a.OpenWorld),
		},
	}
	if !stateful {
		return mt, nil
	}
	var err error
	if mt.RawInputSchema, err = withProperty(mt.RawInputSchema, sessionArg, sessionInput); err != nil {
		return mt, fmt.Errorf("tool %q: input schema: %w", t.Name(), err)
	}
	if a.ReadOnly {
		return mt, nil
	}
	out := mt.RawOutputSchema
	if out == nil {
		out = json.RawMessage(`{"type":"object","additionalProperties":false}`)
	}
	if mt.RawOutputSchema, err = withProperty(out, sessionArg, sessionOutput); err != nil {
		return mt, fmt.Errorf("tool %q: output schema: %w", t.Name(), err)
	}
	return mt, nil
}

// withProperty returns the object schema s with the optional property name
// added.
func withProperty(s json.RawMessage, name string, prop json.RawMessage) (json.RawMessage, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(s, &root); err != nil {
		return nil, err
	}
	props := map[string]json.RawMessage{}
	if raw, ok := root["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, err
		}
	}
	if _, taken := props[name]; taken {
		return nil, fmt.Errorf("the property %q is the session's handle in every tool of a section that keeps state; rename it, or mark the section Stateless", name)
	}
	props[name] = prop
	var err error
	if root["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	return json.Marshal(root)
}

// takeSession removes the "session" argument from args and returns its
// value ("" when absent or empty) and the other arguments. Arguments that
// are not a JSON object are left for validation to refuse.
func takeSession(args json.RawMessage) (string, json.RawMessage, error) {
	// Only arguments that may hold the key are decoded: its name, or an
	// escape that could spell it.
	if !bytes.Contains(args, []byte(sessionArg)) && !bytes.Contains(args, []byte(`\u`)) {
		return "", args, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", args, nil
	}
	raw, ok := m[sessionArg]
	if !ok {
		return "", args, nil
	}
	var h string
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", nil, &schema.Error{Problems: []schema.Problem{{Pointer: "/" + sessionArg, Message: "expected string, got " + jsonType(raw)}}}
	}
	delete(m, sessionArg)
	rest, err := json.Marshal(m)
	return h, rest, err
}

// jsonType names the JSON type of a valid JSON value.
func jsonType(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// metaSession returns the handle a request's _meta names, or "".
func metaSession(m *mcp.Meta) string {
	if m == nil {
		return ""
	}
	h, _ := m.AdditionalFields[MetaSession].(string)
	return h
}

// withHandle is structured content with the session's handle added.
type withHandle struct {
	value  any
	handle string
}

// MarshalJSON writes the value, a JSON object, with "session" added.
func (w withHandle) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.value)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, errors.New("structured content is not a JSON object")
	}
	h, _ := json.Marshal(w.handle)
	out := append([]byte(`{"session":`), h...)
	if inner := bytes.TrimSpace(b[1 : len(b)-1]); len(inner) > 0 {
		out = append(append(out, ','), inner...)
	}
	return append(out, '}'), nil
}
